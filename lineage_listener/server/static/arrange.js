// lineage-listener UI, a graph's elements arranged for drawing, before cytoscape sees them: each column as wide
// as its box's widest words, positions from layout.js, each edge's curve (cytoscape's control points) and the
// place of its label. Plain functions over cytoscape's element objects ({data, classes, position}), so a graph
// is styled once, at its final place: cytoscape works out nothing the layout already knows.
"use strict";

const widths = new Map();  // "px weight text" -> width: the same words are measured once
/** The width of ``text`` in the graph's font at ``px`` (model units), as the canvas draws it. */
function textWidth(text, px = LABEL_PX, weight = "normal") {
  const key = `${px} ${weight} ${text}`;
  let w = widths.get(key);
  if (w === undefined) {
    measuring = measuring || document.createElement("canvas").getContext("2d");
    measuring.font = `${weight} ${px}px ${FONT}`;
    w = measuring.measureText(String(text)).width;
    widths.set(key, w);
  }
  return w;
}
let measuring = null;

const has = (el, name) => (el.classes || "").split(" ").includes(name);

/**
 * Arrange ``els`` (cytoscape element objects; changed in place): widths, positions, edge curves and label
 * places; ``opts``: layout.js's LAYOUT values to change (``rankGap``). Returns the drawing: its bounding box, each node's rectangle and each box's, and the crossings the
 * layout counted (for the minimap, the first view and the bench).
 */
function arrange(els, opts = {}) {
  const L = {...LAYOUT, ...opts};
  const nodes = [], edges = [], kids = new Map(), byId = new Map();
  for (const el of els) {
    if (has(el, "hidden") || has(el, "handle")) continue;
    byId.set(el.data.id, el);
    if (el.data.source === undefined) nodes.push(el); else edges.push(el);
  }
  for (const n of nodes) if (n.data.box) (kids.get(n.data.box) || kids.set(n.data.box, []).get(n.data.box)).push(n);
  // widths: a box's columns as wide as its widest words (a column opened from its schema is cut to that), the box
  // at least as wide as its title
  const boxes = [];
  const ord = (a, b) => (a.data.ord ?? 0) - (b.data.ord ?? 0);
  for (const [id, list] of kids) {
    const box = byId.get(id);
    const path = list.filter(n => !has(n, "extra")), extra = list.filter(n => has(n, "extra"));
    const widest = Math.max(48, textWidth(box.data.title || box.data.label || "", LABEL_PX, "bold") + 4 - 2 * L.pad,
                            ...path.map(n => textWidth(n.data.label) + 18));
    for (const n of list) { n.data.w = widest; n.data.tw = widest - 8; }
    boxes.push({id, rows: path.sort(ord).map(n => n.data.id), tail: extra.sort(ord).map(n => n.data.id), w: widest, titled: true});
  }
  for (const n of nodes) {
    if (n.data.box || has(n, "box")) continue;
    const lines = String(n.data.label).split("\n");
    n.data.w = Math.max(48, ...lines.map(t => textWidth(t, has(n, "job") ? LABEL_PX - 1 : LABEL_PX) + 18));
    boxes.push({id: n.data.id, rows: [n.data.id], tail: [], w: n.data.w, titled: false});
  }
  const links = edges.filter(e => e.data.source !== e.data.target && byId.has(e.data.source) && byId.has(e.data.target));
  const out = layoutLineage(boxes, links.map(e => ({source: e.data.source, target: e.data.target})), opts);
  for (const [id, p] of out.pos) byId.get(id).position = {x: p.x, y: p.y};
  links.forEach((e, i) => Object.assign(e.data, edgeCurve(e.data, byId, out.pos, out.routes[i], out.back[i], out.inner[i])));
  // what the drawing covers: columns, boxes with their titles
  const rects = nodes.filter(n => n.position && !has(n, "box")).map(n => ({id: n.data.id, ...rectOf(n.position, n.data.w, L.node)}));
  const boxRects = [...kids].map(([id, list]) => {
    const ys = list.map(n => n.position.y), x = list[0].position.x, w = list[0].data.w;
    const r = {id, x1: x - w / 2 - L.pad, x2: x + w / 2 + L.pad, y1: Math.min(...ys) - L.node / 2 - L.pad,
               y2: Math.max(...ys) + L.node / 2 + L.pad};
    const tw = textWidth(byId.get(id).data.label || "", LABEL_PX, "bold") / 2 + 2;
    r.title = {x1: x - tw, x2: x + tw, y1: r.y1 - L.title, y2: r.y1};
    const box = byId.get(id);  // the box is a node of its own, under its columns
    box.position = {x, y: (r.y1 + r.y2) / 2};
    Object.assign(box.data, {bw: r.x2 - r.x1, bh: r.y2 - r.y1});
    return r;
  });
  placeEdgeLabels(links, rects, boxRects);
  const all = [...rects, ...boxRects, ...boxRects.map(b => b.title)];
  const bbox = all.length ? {x1: Math.min(...all.map(r => r.x1)), y1: Math.min(...all.map(r => r.y1)),
                             x2: Math.max(...all.map(r => r.x2)), y2: Math.max(...all.map(r => r.y2))} : {x1: 0, y1: 0, x2: 1, y2: 1};
  bbox.w = bbox.x2 - bbox.x1;
  bbox.h = bbox.y2 - bbox.y1;
  return {bbox, rects, boxRects, crossings: out.crossings,
          lines: links.map(e => [e.data.path[0], e.data.path[e.data.path.length - 1], e.data.source, e.data.target])};
}

function rectOf(p, w, h) { return {x1: p.x - w / 2, x2: p.x + w / 2, y1: p.y - h / 2, y2: p.y + h / 2}; }

/**
 * An edge's curve: it leaves its source's right side and enters its target's left side on an S-curve through
 * the corridors kept for it (a step back in a cycle runs right to left; a step inside one dataset bows out on
 * the right). Cytoscape takes the control points as distances from, and weights along, the line between the
 * nodes' centres; ``path`` (start, control points, end) is kept to place the label.
 */
function edgeCurve(d, byId, pos, route, back, inner) {
  const s = pos.get(d.source), t = pos.get(d.target);
  const ws = byId.get(d.source).data.w / 2, wt = byId.get(d.target).data.w / 2;
  let a, b, ctrl;
  if (inner) {
    a = {x: s.x + ws, y: s.y};
    b = {x: t.x + wt, y: t.y};
    const out = 24 + Math.min(60, Math.abs(t.y - s.y) / 4);
    ctrl = [{x: a.x + out, y: a.y}, {x: b.x + out, y: b.y}];
  } else {
    a = {x: back ? s.x - ws : s.x + ws, y: s.y};
    b = {x: back ? t.x + wt : t.x - wt, y: t.y};
    const pts = [a, ...route, b];
    ctrl = [];
    for (let k = 1; k < pts.length; k++) {
      const m = (pts[k - 1].x + pts[k].x) / 2;
      ctrl.push({x: m, y: pts[k - 1].y}, {x: m, y: pts[k].y});
    }
  }
  const vx = t.x - s.x, vy = t.y - s.y, len2 = vx * vx + vy * vy || 1, len = Math.sqrt(len2);
  return {
    cpd: ctrl.map(p => (-(p.x - s.x) * vy + (p.y - s.y) * vx) / len),
    cpw: ctrl.map(p => ((p.x - s.x) * vx + (p.y - s.y) * vy) / len2),
    way: inner ? "inner" : back ? "back" : "fwd",
    path: [a, ...ctrl, b],
  };
}

const overlap = (a, b, gap = 0) => a.x1 < b.x2 + gap && b.x1 < a.x2 + gap && a.y1 < b.y2 + gap && b.y1 < a.y2 + gap;

/** Rectangles in a grid of cells, to find those near a rectangle without looking at all of them. */
class Grid {
  constructor(cell = 64) { this.cell = cell; this.cells = new Map(); }
  add(b) {
    const c = this.cell;
    for (let i = Math.floor(b.x1 / c); i <= Math.floor(b.x2 / c); i++) {
      for (let j = Math.floor(b.y1 / c); j <= Math.floor(b.y2 / c); j++) {
        const k = i * 65536 + j, list = this.cells.get(k);
        if (list) list.push(b); else this.cells.set(k, [b]);
      }
    }
  }
  hits(b, gap) {
    const c = this.cell;
    for (let i = Math.floor((b.x1 - gap) / c); i <= Math.floor((b.x2 + gap) / c); i++) {
      for (let j = Math.floor((b.y1 - gap) / c); j <= Math.floor((b.y2 + gap) / c); j++) {
        const list = this.cells.get(i * 65536 + j);
        if (list) for (const o of list) if (overlap(o, b, gap)) return true;
      }
    }
    return false;
  }
}

/** ``path`` (start, control points, end) as the quadratic pieces cytoscape draws an unbundled bezier with: each
 * from the middle of two control points to the next middle, bent by the control point between. */
function pieces(path) {
  const c = path.slice(1, -1), out = [];
  let from = path[0];
  c.forEach((p, i) => {
    const to = i + 1 < c.length ? {x: (p.x + c[i + 1].x) / 2, y: (p.y + c[i + 1].y) / 2} : path[path.length - 1];
    out.push([from, p, to]);
    from = to;
  });
  return out;
}

/** The point ``f`` (0 to 1) of the way along ``parts`` (pieces()). */
function piecePoint(parts, f) {
  const at = Math.min(parts.length - 1e-9, f * parts.length), i = Math.floor(at), t = at - i;
  const [p0, p1, p2] = parts[i];
  return {x: (1 - t) * (1 - t) * p0.x + 2 * t * (1 - t) * p1.x + t * t * p2.x,
          y: (1 - t) * (1 - t) * p0.y + 2 * t * (1 - t) * p1.y + t * t * p2.y};
}

/** Where cytoscape draws an edge's label: the middle of its two middle control points (``path``'s). */
function labelAnchor(path) {
  const c = path.slice(1, -1), k = c.length / 2;
  return {x: (c[k - 1].x + c[k].x) / 2, y: (c[k - 1].y + c[k].y) / 2};
}

/** Where along a bend an edge label may go, best first. */
const SPOTS = [0.5, 0.38, 0.62, 0.26, 0.74, 0.15, 0.85];

/**
 * Put each edge label where it covers no column, no box title and no other label: near the middle of its
 * first bend, else further along it or along its last, else just above or below the curve; alarms first,
 * then copies, then the rest. An edge with no free place shows
 * its words when hovered or highlighted, in its tooltip and in the table.
 */
function placeEdgeLabels(edges, rects, boxRects) {
  const taken = new Grid();
  for (const r of rects) taken.add(r);
  for (const b of boxRects) taken.add(b.title);
  const rank = e => e.data.alarm ? 0 : e.data.kind === "direct" ? 1 : 2;
  const h = (EDGE_LABEL_PX * 1.25 + 4) / 2;  // as cytoscape draws a line of text with its background
  for (const e of [...edges].sort((a, b) => rank(a) - rank(b))) {
    const parts = pieces(e.data.path), w = textWidth(e.data.label || "", EDGE_LABEL_PX) / 2 + 3;
    const bend = 2 / parts.length;  // the share of the path each bend takes (its corridors make more bends)
    const along = [...SPOTS.map(f => piecePoint(parts, f * bend)),
                   ...(bend < 1 ? SPOTS.map(f => piecePoint(parts, 1 - bend + f * bend)) : [])];
    let spot = null;
    for (const dy of e.data.label ? [0, -h - 1, h + 1] : []) {  // on the curve, else just above or below it
      for (const p of along) {
        const y = p.y + dy, b = {x1: p.x - w, x2: p.x + w, y1: y - h, y2: y + h};
        if (!taken.hits(b, 2)) { spot = {p: {x: p.x, y}, b}; break; }
      }
      if (spot) break;
    }
    if (!spot) { Object.assign(e.data, {show: 0, mx: 0, my: 0}); continue; }
    taken.add(spot.b);
    const m = labelAnchor(e.data.path);
    Object.assign(e.data, {show: 1, mx: spot.p.x - m.x, my: spot.p.y - m.y});
  }
}
