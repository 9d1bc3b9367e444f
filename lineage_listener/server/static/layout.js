// lineage-listener UI, the layout of a lineage graph: boxes (datasets, jobs) in layers from left to right, each
// box's rows (its columns) stacked inside it; boxes and rows ordered to cut crossings; a link that skips
// layers is routed through a gap kept free for it in each layer it passes.
//
// Plain functions over plain data (no cytoscape here), in the steps of a layered (Sugiyama) drawing:
//   1. rank the boxes: links between boxes point right, a cycle's back links are turned round first;
//   2. give each layer a slot (a "corridor") per box pair whose links skip it;
//   3. order the boxes of each layer and the rows of each box by the barycentre of what they link to in the
//      layer before (sweeping right), then after (sweeping left), keeping the order with fewest crossings;
//   4. place each layer's boxes as near the height of what they link to as their order allows;
//   5. route each link through its corridors.
"use strict";

const LAYOUT = {
  node: 24,       // a row's height
  row: 30,        // vertical step between rows of a box
  pad: 8,         // a box's margin around its rows
  title: 20,      // room above a box for its title
  gap: 16,        // least room between two boxes of a layer
  rankGap: 100,   // room between two layers, for edges and their labels
  lane: 6,        // vertical room per link in a corridor
  sweeps: 8,      // ordering sweeps (right, left, right...)
};

/**
 * Lay out ``boxes`` and ``links``.
 *
 * ``boxes``: ``[{id, rows, tail, w, titled}]``: ``rows`` (row ids) are reordered to cut crossings, ``tail`` rows
 * stay in their order below them (a dataset's columns that are not on the path); ``w``: a row's width;
 * ``titled``: the box has a title above it and a margin (a dataset), else it is its only row (a job).
 * ``links``: ``[{source, target}]`` of row ids.
 *
 * Returns ``{pos: Map(row id -> {x, y}), routes: [[{x, y}]] (per link, the points it passes between its ends),
 * back: [bool] (per link: drawn right to left), inner: [bool] (both ends in one box), crossings}``.
 *
 * >>> layoutLineage([{id: "a", rows: ["a1"], tail: [], w: 40, titled: true}], []).pos.get("a1")   // {x: 28, y: 40}
 */
function layoutLineage(boxes, links, opts = {}) {
  const L = {...LAYOUT, ...opts};
  const boxOf = new Map();
  boxes.forEach((b, i) => { for (const r of [...b.rows, ...b.tail]) boxOf.set(r, i); });
  const live = links.filter(k => boxOf.has(k.source) && boxOf.has(k.target));
  // 1. ranks
  const pairs = new Map();  // "i>j" -> {from, to}: box i links to box j
  for (const k of live) {
    const i = boxOf.get(k.source), j = boxOf.get(k.target);
    if (i !== j && !pairs.has(`${i}>${j}`)) pairs.set(`${i}>${j}`, {from: i, to: j});
  }
  const reversed = backPairs(boxes.length, [...pairs.values()]);
  const arcs = [...pairs.values()].map(p => reversed.has(`${p.from}>${p.to}`) ? {from: p.to, to: p.from} : p);
  const rank = rankBoxes(boxes.length, arcs);
  // 2. layers of items: a box, or a corridor of the box pair {from, to} in a layer it skips
  const layers = [];
  const items = boxes.map((b, i) => ({kind: "box", box: i, rows: [...b.rows], tail: b.tail, rank: rank[i]}));
  for (const it of items) (layers[it.rank] ||= []).push(it);
  const corridors = new Map();  // "i>j" (oriented left to right) -> [corridor item per skipped layer]
  for (const a of arcs) {
    const key = `${a.from}>${a.to}`;
    if (rank[a.to] - rank[a.from] < 2 || corridors.has(key)) continue;
    const chain = [];
    for (let r = rank[a.from] + 1; r < rank[a.to]; r++) {
      const c = {kind: "corridor", id: `${key}@${r}`, rank: r, links: []};
      (layers[r] ||= []).push(c);
      chain.push(c);
    }
    corridors.set(key, chain);
  }
  for (let r = 0; r < layers.length; r++) layers[r] ||= [];
  // each link as the ports it passes, left to right: its left row, corridors, its right row
  const paths = live.map((k, n) => {
    const i = boxOf.get(k.source), j = boxOf.get(k.target);
    const back = i !== j && (reversed.has(`${i}>${j}`) || (rank[i] > rank[j]));
    const [u, v] = back ? [k.target, k.source] : [k.source, k.target];
    const chain = i === j ? [] : corridors.get(`${boxOf.get(u)}>${boxOf.get(v)}`) || [];
    chain.forEach(c => c.links.push(n));
    return {n, back, inner: i === j, ports: [u, ...chain.map(c => c.id), v], chain};
  });
  // 3. order
  const segments = layers.map(() => []);  // segments[r]: [left port, right port] between layers r and r + 1
  for (const p of paths) {
    if (p.inner) continue;
    for (let s = 1; s < p.ports.length; s++) {
      const r = portRank(p.ports[s - 1], boxOf, rank, p.chain);
      if (r + 1 === portRank(p.ports[s], boxOf, rank, p.chain)) segments[r].push([p.ports[s - 1], p.ports[s]]);
    }
  }
  const crossings = orderLayers(layers, segments, L.sweeps);
  // 4. coordinates
  const pos = new Map(), corridorAt = new Map();
  const geometry = placeLayers(layers, segments, boxes, L);
  let x0 = 0;
  layers.forEach((layer, r) => {
    const width = Math.max(0, ...layer.map(it => it.kind === "box" ? itemWidth(boxes[it.box], L) : 0));
    const cx = x0 + width / 2;
    for (const it of layer) {
      const top = geometry.get(it);
      if (it.kind === "corridor") { corridorAt.set(it.id, {x: cx, top, it}); continue; }
      const b = boxes[it.box];
      [...it.rows, ...it.tail].forEach((row, k) => pos.set(row, {x: cx, y: top + rowOffset(b, k, L)}));
    }
    x0 += width + L.rankGap;
  });
  // 5. routes: each corridor gives its links lanes, in the order of the rows they come from
  for (const c of corridorAt.values()) {
    c.lanes = new Map();
    const order = [...c.it.links].sort((a, b) => pos.get(paths[a].ports[0]).y - pos.get(paths[b].ports[0]).y
                                              || pos.get(paths[a].ports.at(-1)).y - pos.get(paths[b].ports.at(-1)).y);
    order.forEach((n, k) => c.lanes.set(n, c.top + L.lane * (k + 0.5)));
  }
  const routes = paths.map(p => {
    const pts = p.chain.map(c => { const at = corridorAt.get(c.id); return {x: at.x, y: at.lanes.get(p.n)}; });
    return p.back ? pts.reverse() : pts;
  });
  return {pos, routes, back: paths.map(p => p.back), inner: paths.map(p => p.inner), crossings, rank};
}

/** The rank of a port: a row's box's rank, or a corridor's layer. */
function portRank(port, boxOf, rank, chain) {
  if (boxOf.has(port)) return rank[boxOf.get(port)];
  return chain.find(c => c.id === port).rank;
}

/** A box's full width: its rows and its margins (a job is its row). */
function itemWidth(b, L) { return b.titled ? b.w + 2 * L.pad : b.w; }

/** How far below its item's top the ``k``-th row of box ``b`` lies (its centre). */
function rowOffset(b, k, L) { return b.titled ? L.title + L.pad + L.node / 2 + k * L.row : L.node / 2; }

/** An item's height: a box's title, margins and rows, or a corridor's lanes. */
function itemHeight(it, boxes, L) {
  if (it.kind === "corridor") return Math.max(2, it.links.length) * L.lane;
  const b = boxes[it.box], n = it.rows.length + it.tail.length;
  return b.titled ? L.title + 2 * L.pad + L.node + (n - 1) * L.row : L.node;
}

/**
 * The arcs of a cycle to turn round so the box graph has none: those a depth-first walk (boxes in their
 * order) finds leading back to a box it is still inside. Returns their "from>to" keys.
 *
 * >>> [...backPairs(2, [{from: 0, to: 1}, {from: 1, to: 0}])]   // ["1>0"]
 */
function backPairs(n, arcs) {
  const out = Array.from({length: n}, () => []);
  for (const a of arcs) out[a.from].push(a.to);
  const state = new Array(n).fill(0), back = new Set();  // 0 new, 1 on the walk's path, 2 done
  for (let s = 0; s < n; s++) {
    if (state[s]) continue;
    const stack = [[s, 0]];
    state[s] = 1;
    while (stack.length) {
      const top = stack[stack.length - 1], [v, k] = top;
      if (k < out[v].length) {
        top[1]++;
        const w = out[v][k];
        if (state[w] === 1) back.add(`${v}>${w}`);
        else if (!state[w]) { state[w] = 1; stack.push([w, 0]); }
      } else {
        state[v] = 2;
        stack.pop();
      }
    }
  }
  return back;
}

/**
 * Each box's layer: the longest path from a box nothing links into, then each such box moved right to just
 * before the nearest box it links to (a source sits beside what it feeds, not at the far left).
 */
function rankBoxes(n, arcs) {
  const preds = Array.from({length: n}, () => []), succs = Array.from({length: n}, () => []);
  for (const a of arcs) { preds[a.to].push(a.from); succs[a.from].push(a.to); }
  const rank = new Array(n).fill(0), waiting = preds.map(p => p.length), todo = [];
  for (let i = 0; i < n; i++) if (!waiting[i]) todo.push(i);
  for (let k = 0; k < todo.length; k++) {
    const v = todo[k];
    for (const w of succs[v]) {
      rank[w] = Math.max(rank[w], rank[v] + 1);
      if (--waiting[w] === 0) todo.push(w);
    }
  }
  for (let i = 0; i < n; i++) {
    if (!preds[i].length && succs[i].length) rank[i] = Math.min(...succs[i].map(w => rank[w])) - 1;
  }
  const least = Math.min(0, ...rank);
  return rank.map(r => r - least);
}

/**
 * Order the items of each layer and the rows of each box to cut crossings: barycentre sweeps, right then
 * left, keeping the best order seen, then swaps of neighbours that cross less swapped (transpose). ``segments[r]``: the [left, right] port pairs between layers r and r+1.
 * Returns the crossings of the order kept.
 */
function orderLayers(layers, segments, sweeps) {
  const ports = it => it.kind === "box" ? it.rows : [it.id];
  const position = layer => {
    const at = new Map();
    let k = 0;
    for (const it of layer) for (const p of ports(it)) at.set(p, k++);
    return at;
  };
  const count = () => segments.reduce((sum, segs, r) => r + 1 < layers.length
    ? sum + crossingsBetween(segs, position(layers[r]), position(layers[r + 1])) : sum, 0);
  const snapshot = () => layers.map(layer => layer.map(it => ({it, order: [...ports(it)]})));
  const restore = snap => snap.forEach((layer, r) => {
    layers[r] = layer.map(({it, order}) => { if (it.kind === "box") it.rows = order; return it; });
  });
  let best = count(), kept = snapshot();
  for (let s = 0; s < sweeps && best > 0; s++) {
    const right = s % 2 === 0;
    for (let k = 1; k < layers.length; k++) {
      const r = right ? k : layers.length - 1 - k, fixed = right ? r - 1 : r + 1;
      const at = position(layers[fixed]), near = new Map();
      for (const [a, b] of segments[right ? fixed : r]) {
        const [mine, theirs] = right ? [b, a] : [a, b];
        (near.get(mine) || near.set(mine, []).get(mine)).push(at.get(theirs));
      }
      reorder(layers, r, near, ports);
    }
    const c = count();
    if (c < best) { best = c; kept = snapshot(); }
  }
  restore(kept);
  if (best > 0) {
    transpose(layers, segments, ports, position);
    best = count();
  }
  return best;
}

/** Sort the ports of ``layers[r]`` by the mean position of what they link to (``near``): rows within their box,
 * items within the layer; a row or item linked to nothing there keeps its place. */
function reorder(layers, r, near, ports) {
  const mean = xs => xs.reduce((a, b) => a + b, 0) / xs.length;
  const bary = new Map();
  for (const it of layers[r]) {
    if (it.kind === "box") it.rows = sortKept(it.rows, p => near.has(p) ? mean(near.get(p)) : undefined);
    const all = ports(it).flatMap(p => near.get(p) || []);
    if (all.length) bary.set(it, mean(all));
  }
  layers[r] = sortKept(layers[r], it => bary.get(it));
}

/**
 * Swap two neighbouring rows of a box, or two neighbouring items of a layer, wherever that makes fewer of their
 * links cross those of the layers beside; again until no swap helps (a few rounds at most).
 */
function transpose(layers, segments, ports, position) {
  const left = new Map(), right = new Map();
  const add = (m, k, v) => (m.get(k) || m.set(k, []).get(k)).push(v);
  segments.forEach(segs => { for (const [a, b] of segs) { add(right, a, b); add(left, b, a); } });
  for (let round = 0; round < 4; round++) {
    let swapped = false;
    for (let r = 0; r < layers.length; r++) {
      // each port's neighbours as positions in the layers beside, once per layer (they do not move here)
      const sides = [[left, r > 0 ? position(layers[r - 1]) : null], [right, r + 1 < layers.length ? position(layers[r + 1]) : null]]
        .filter(([, at]) => at);
      const near = new Map();
      for (const it of layers[r]) {
        for (const p of ports(it)) near.set(p, sides.map(([m, at]) => (m.get(p) || []).map(q => at.get(q))));
      }
      // how many links of ``upper`` cross links of ``lower`` when ``upper`` is drawn above ``lower``
      const cost = (upper, lower) => {
        let n = 0;
        for (let k = 0; k < sides.length; k++) {
          for (const p of upper) {
            const xs = near.get(p)[k];
            if (!xs.length) continue;
            for (const q of lower) for (const y of near.get(q)[k]) for (const x of xs) if (x > y) n++;
          }
        }
        return n;
      };
      for (const it of layers[r]) {
        if (it.kind !== "box") continue;
        for (let k = 0; k + 1 < it.rows.length; k++) {
          const u = [it.rows[k]], v = [it.rows[k + 1]];
          if (cost(v, u) < cost(u, v)) { it.rows[k] = v[0]; it.rows[k + 1] = u[0]; swapped = true; }
        }
      }
      const layer = layers[r];
      for (let k = 0; k + 1 < layer.length; k++) {
        const u = ports(layer[k]), v = ports(layer[k + 1]);
        if (cost(v, u) < cost(u, v)) { [layer[k], layer[k + 1]] = [layer[k + 1], layer[k]]; swapped = true; }
      }
    }
    if (!swapped) return;
  }
}

/**
 * ``xs`` with the elements that have a ``key`` sorted by it (stable) in the places those elements held; the
 * others stay where they are.
 *
 * >>> sortKept(["a", "b", "c", "d"], x => ({a: 3, c: 1, d: 2})[x])   // ["c", "b", "d", "a"]
 */
function sortKept(xs, key) {
  const keyed = xs.map((x, i) => ({x, i, k: key(x)})).filter(e => e.k !== undefined);
  const slots = keyed.map(e => e.i);
  const sorted = [...keyed].sort((a, b) => a.k - b.k || a.i - b.i);
  const out = [...xs];
  slots.forEach((slot, j) => { out[slot] = sorted[j].x; });
  return out;
}

/**
 * Crossings between two layers: pairs of segments whose left ends and right ends are in opposite orders.
 *
 * >>> crossingsBetween([["a", "y"], ["b", "x"]], new Map([["a", 0], ["b", 1]]), new Map([["x", 0], ["y", 1]]))   // 1
 */
function crossingsBetween(segs, left, right) {
  const s = segs.map(([a, b]) => [left.get(a), right.get(b)]).sort((p, q) => p[0] - q[0] || p[1] - q[1]);
  // count the pairs whose right ends are in the opposite order, with a Fenwick tree over the right positions
  const size = Math.max(0, ...s.map(p => p[1])) + 2, tree = new Array(size + 1).fill(0);
  let n = 0, seen = 0;
  for (const [, y] of s) {
    let below = 0;
    for (let i = y + 1; i > 0; i -= i & -i) below += tree[i];  // earlier segments ending at y or above it
    n += seen - below;
    for (let i = y + 1; i <= size; i += i & -i) tree[i]++;
    seen++;
  }
  return n;
}

/**
 * The top of each item: each layer's items in their order, as near as they may be to the height of what they
 * link to in the layers beside (a weighted least-squares fit keeping the order and the gaps), a few sweeps.
 */
function placeLayers(layers, segments, boxes, L) {
  const top = new Map(), offset = new Map(), owner = new Map();
  for (const layer of layers) {
    let y = 0;
    for (const it of layer) {
      top.set(it, y);
      y += itemHeight(it, boxes, L) + L.gap;
      if (it.kind === "corridor") { owner.set(it.id, it); offset.set(it.id, itemHeight(it, boxes, L) / 2); }
      else [...it.rows, ...it.tail].forEach((p, k) => { owner.set(p, it); offset.set(p, rowOffset(boxes[it.box], k, L)); });
    }
  }
  // links[r]: a port in layer r and one in a layer beside, as [its item, its offset, the other's item, its offset]
  // (looked up once: the sweeps below read them for every link six times)
  const links = layers.map(() => []);
  const link = (mine, theirs) => [owner.get(mine), offset.get(mine), owner.get(theirs), offset.get(theirs)];
  segments.forEach((segs, r) => {
    for (const [a, b] of segs) { links[r].push(link(a, b)); if (links[r + 1]) links[r + 1].push(link(b, a)); }
  });
  const heightsOf = layers.map(layer => layer.map(it => itemHeight(it, boxes, L)));
  for (let s = 0; s < 6; s++) {
    const order = s % 2 === 0 ? layers.map((_, r) => r) : layers.map((_, r) => layers.length - 1 - r);
    for (const r of order) {
      const want = new Map(), weight = new Map();
      for (const [it, mine, other, theirs] of links[r]) {
        want.set(it, (want.get(it) || 0) + (top.get(other) + theirs) - mine);
        weight.set(it, (weight.get(it) || 0) + 1);
      }
      const layer = layers[r];
      const heights = heightsOf[r];
      const wanted = layer.map(it => weight.has(it) ? want.get(it) / weight.get(it) : top.get(it));
      const weights = layer.map(it => weight.get(it) || 0.01);
      fitInOrder(wanted, weights, heights, L.gap).forEach((y, k) => top.set(layer[k], y));
    }
  }
  const least = Math.min(0, ...top.values());
  for (const [it, y] of top) top.set(it, y - least);
  return top;
}

/**
 * Tops ``y`` closest to ``wanted`` (least squares, by ``weights``) that keep the order and leave ``gap``
 * between items of ``heights``: pool-adjacent-violators on the tops less the room the items before need.
 *
 * >>> fitInOrder([0, 0], [1, 1], [10, 10], 0)   // [-5, 5]
 */
function fitInOrder(wanted, weights, heights, gap) {
  const before = [];
  let room = 0;
  for (const h of heights) { before.push(room); room += h + gap; }
  const blocks = [];  // {sum, weight, n}
  wanted.forEach((w, i) => {
    blocks.push({sum: (w - before[i]) * weights[i], weight: weights[i], n: 1});
    while (blocks.length > 1) {
      const b = blocks[blocks.length - 1], a = blocks[blocks.length - 2];
      if (a.sum / a.weight <= b.sum / b.weight) break;
      blocks.splice(-2, 2, {sum: a.sum + b.sum, weight: a.weight + b.weight, n: a.n + b.n});
    }
  });
  const out = [];
  for (const b of blocks) for (let k = 0; k < b.n; k++) out.push(b.sum / b.weight + before[out.length]);
  return out;
}
