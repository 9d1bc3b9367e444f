// lineage-listener UI, the graph: a lineage payload drawn with cytoscape.js, its frame, zoom, minimap,
// hover and selection, dataset boxes that open to their whole schema, and the same graph as a table.
"use strict";
const MAX_NODES = 500;
const BIG_GRAPH = 150;     // nodes: above this the layout ranks by longest path (network simplex is ~10x slower)
const FONT = "Helvetica Neue, Helvetica, sans-serif";  // cytoscape's default, named here so label widths are measured in it
const LABEL_PX = 12;       // column and dataset labels, in model units
const EDGE_LABEL_PX = 11;  // transform labels on edges, in model units
const READABLE_PX = 10;    // the first view and "fit" draw no label smaller than this: pan (or use the minimap) instead
const MIN_READABLE_ZOOM = READABLE_PX / Math.min(LABEL_PX, EDGE_LABEL_PX);
const HIDDEN_BELOW_PX = 7; // zoomed out further by hand, labels smaller than this are not drawn (shapes only)
const MAX_FIRST_ZOOM = 1.5;
const MINIMAP_OVER = 50;   // nodes; a graph that does not fit at a readable size gets one too
const EDGE_LABELS_UP_TO = 40;
const BOX_PAD = 8;         // a dataset box's margin around its columns
const BOX_GAP = 12;        // least room between a box (its title included) and its neighbours
const ROW = 30;            // vertical step of the columns an expanded box adds
const MIN_FRAME_PX = 360;  // the graph frame's least height

// ---------------------------------------------------------------- the graph
function nodeId(n) { return JSON.stringify([n.dataset, n.column]); }

/**
 * Dataset labels as short as stays clear (full name on hover): without Spark's session catalog
 * (``spark_catalog.warehouse.t`` is ``warehouse.t``) and without the folder all path datasets of the graph share.
 */
function shortNames(datasets) {
  const paths = datasets.filter(d => /^[a-z0-9]+:\//i.test(d));
  let prefix = "";
  if (paths.length > 1) {
    prefix = paths.reduce((a, b) => { let i = 0; while (i < a.length && a[i] === b[i]) i++; return a.slice(0, i); });
    prefix = prefix.slice(0, prefix.lastIndexOf("/") + 1);
  }
  const out = {};
  for (const d of datasets) {
    out[d] = prefix && d.startsWith(prefix) && d.length > prefix.length ? "…/" + d.slice(prefix.length)
      : /^spark_catalog\.[^.]+\.[^.]/.test(d) ? d.slice("spark_catalog.".length) : d;
  }
  return out;
}

let measuring = null;
/** The width of ``text`` in the graph's font at ``px`` (model units), as the canvas draws it. */
function textWidth(text, px = LABEL_PX, weight = "normal") {
  measuring = measuring || document.createElement("canvas").getContext("2d");
  measuring.font = `${weight} ${px}px ${FONT}`;
  return measuring.measureText(String(text)).width;
}

const GRAPH_STYLE = [
  {selector: "node", style: {"shape": "round-rectangle", "label": "data(label)", "text-valign": "center",
    "font-family": FONT, "font-size": LABEL_PX, "min-zoomed-font-size": HIDDEN_BELOW_PX, "width": "data(w)", "height": 24,
    "background-color": "#dfe9f3", "border-width": 1, "border-color": "#5b7a99", "color": "#111"}},
  {selector: ":parent", style: {"shape": "round-rectangle", "background-color": "#f4f6f8", "background-opacity": 1,
    "border-color": "#8aa1b8", "border-width": 1, "text-valign": "top", "text-halign": "center", "font-size": LABEL_PX,
    "font-weight": "bold", "padding": BOX_PAD, "color": "#1f3b57"}},
  {selector: "node[start = 1]", style: {"background-color": "#f7d774", "border-width": 2}},
  {selector: "node[reach = 'copy']", style: {"border-width": 2, "border-color": "#2c6fad"}},
  // influenced only (an indirect step on every path): neutral, never a copy's colour
  {selector: "node[reach = 'influenced']", style: {"background-color": "#f1f2f3", "border-color": "#8c959f", "border-width": 2,
    "border-style": "dotted", "color": "#444"}},
  {selector: "node[status = 'unmasked']", style: {"background-color": "#fbd5d0", "border-color": "#c0392b", "border-width": 3}},
  {selector: "node[status = 'partly']", style: {"background-color": "#fde8c8", "border-color": "#d68910", "border-width": 2}},
  {selector: "node[status = 'masked']", style: {"background-color": "#d5f0dc", "border-color": "#1e8449"}},
  {selector: "node[before = 1]", style: {"font-style": "italic", "color": "#666", "background-opacity": 0.45}},
  {selector: "edge", style: {"curve-style": "bezier", "target-arrow-shape": "triangle", "font-family": FONT,
    "font-size": EDGE_LABEL_PX, "min-zoomed-font-size": HIDDEN_BELOW_PX, "width": 1.5, "line-color": "#555",
    "target-arrow-color": "#555", "text-background-color": "#fff", "text-background-opacity": 1, "text-background-padding": 1,
    "text-margin-x": "data(mx)", "text-margin-y": "data(my)"}},
  {selector: "edge[show = 1], edge.hl", style: {"label": "data(label)"}},
  {selector: "edge[kind = 'indirect']", style: {"line-style": "dashed", "line-color": "#999", "target-arrow-color": "#999"}},
  {selector: "edge[masking = 1]", style: {"line-color": "#1e8449", "target-arrow-color": "#1e8449", "color": "#1e8449", "width": 2.5}},
  {selector: "edge[alarm = 1]", style: {"line-color": "#c0392b", "target-arrow-color": "#c0392b", "color": "#c0392b", "width": 3}},
  // a hop written before the window: faded, a hollow circle where it leaves its source
  {selector: "edge[before = 1]", style: {"opacity": 0.55, "source-arrow-shape": "circle", "source-arrow-fill": "hollow",
    "source-arrow-color": "#6b5b95", "arrow-scale": 1.2}},
  {selector: ".dim", style: {"opacity": 0.15}},
  {selector: "node.sel", style: {"border-width": 4, "border-color": "#1f3b57"}},
  {selector: "node.extra", style: {"border-style": "dashed", "background-color": "#fbfcfd", "color": "#666",
    "text-wrap": "ellipsis", "text-max-width": "data(tw)"}},  // as wide as the box's columns: a longer name is cut (hover)
  {selector: "edge.hl", style: {"width": 3, "z-index": 10}},
];

/** The graph's frame: zoom buttons, canvas, minimap; with ``table``, a selection panel and a table of the same graph. */
function graphFrame(what = "lineage graph", table = true) {
  return `<div class="graph-wrap"><div id="graph" role="img" aria-label="${esc(what)}; the same graph is in the table below"></div>
    <div class="zoom" role="toolbar" aria-label="zoom"><button id="zoom-in" title="zoom in">+</button><button id="zoom-out" title="zoom out">−</button>
      <button id="zoom-fit" title="fit the graph, down to readable labels (then pan, or click the minimap)">fit</button><button id="zoom-reset" title="readable size around the start">1:1</button></div>
    <div id="minimap" hidden><div id="minimap-view"></div></div></div>
    ${table ? `<div id="selection" class="selection">Click a column to highlight where it comes from and where it goes; click the background to clear.</div>
    <details id="graph-table"><summary>the graph as a table</summary><div id="graph-table-body"></div></details>` : ""}`;
}

/**
 * Which side of the start each column of ``data`` lies on: "down" (where it went), "up" (where it came
 * from); a "both" graph is walked from the start both ways (a column found both ways is upstream, as the
 * API's ``reach`` is then the backward walk's).
 */
function sideOf(data) {
  if (data.direction === "forward") return () => "down";
  if (data.direction !== "both") return () => "up";
  const start = nodeId(data.start || {});
  const walk = (from, to) => {
    const next = new Map();
    for (const e of data.edges) {
      const a = nodeId(e[from]);
      if (!next.has(a)) next.set(a, []);
      next.get(a).push(nodeId(e[to]));
    }
    const seen = new Set(), todo = [start];
    while (todo.length) for (const x of next.get(todo.pop()) || []) if (!seen.has(x)) { seen.add(x); todo.push(x); }
    return seen;
  };
  const up = walk("target", "source"), down = walk("source", "target");
  return n => up.has(nodeId(n)) ? "up" : down.has(nodeId(n)) ? "down" : "";
}

/**
 * A column's masking status as the graph draws it: a copy's ``masking`` downstream, written in the window
 * (``before_window`` columns are not the start's copies in the window, as impact does not list them);
 * empty for the start, influenced columns and sources.
 */
function statusOf(n, side) {
  return side === "down" && n.reach === "copy" && !n.before_window && STATUS_WORDS[n.masking] ? n.masking : "";
}

/**
 * What ``data`` says about the start's copies, counted as the impact report counts them: downstream the
 * copies in the window by masking and the columns only influenced; upstream the columns it is a copy of and
 * those that only influenced it; and the columns written before the window.
 */
function reachCounts(data, side) {
  const c = {down: {copies: 0, unmasked: 0, partly: 0, masked: 0, influenced: 0}, up: {copies: 0, influenced: 0}, before: 0};
  for (const n of data.nodes) {
    if (!n.reach || n.reach === "start") continue;
    const s = side(n);
    if (n.before_window) c.before++;
    if (s === "down" && !n.before_window) {
      if (n.reach === "copy") { c.down.copies++; if (n.masking in c.down) c.down[n.masking]++; }
      else c.down.influenced++;
    } else if (s === "up") {
      c.up[n.reach === "copy" ? "copies" : "influenced"]++;
    }
  }
  return c;
}

/** The graph header's words for reachCounts ``c``: "2 unmasked copies, 0 partly masked, 1 masked on every path · ...". */
function reachSummary(c, direction) {
  const parts = [];
  if (direction !== "backward") {
    const d = c.down;
    parts.push(d.copies
      ? `<span id="copies-count"><span class="${d.unmasked ? "alarm" : ""}" id="unmasked-count">${plural(d.unmasked, "unmasked copy")}</span>, ${d.partly} partly masked, ${d.masked} masked on every path</span>`
      : `<span id="copies-count">0 copies</span>`,
      `<span id="influenced-count">${plural(d.influenced, "column")} influenced only</span>`);
  }
  if (direction !== "forward") {
    parts.push(`<span id="sources-count">copied from ${plural(c.up.copies, "column")}</span>`,
      `<span id="influencers-count">influenced by ${plural(c.up.influenced, "column")}</span>`);
  }
  if (c.before) parts.push(`<span class="before" id="before-count">${plural(c.before, "column")} written before the window</span>`);
  return parts.join(" · ");
}

/** The notes a column's tooltip and the table give: copy or influence, masking, before the window. */
function reachNotes(d) {
  const copy = d.reach === "copy" && (d.side === "down" ? (COPY_WORDS[d.masking] || "copy of the start") : "the start holds a copy of it (direct path)");
  const influenced = d.reach === "influenced" && (d.side === "up" ? `influenced the start via ${d.via} (not a copy)` : `influenced via ${d.via} (not a copy)`);
  return [copy, influenced, d.before && "written before the window"].filter(Boolean);
}

/** Draw ``data`` (a lineage graph payload: start, direction, nodes, edges, window) into #graph. ``opts.query``: the URL query to keep when re-centring. */
function draw(data, opts = {}) {
  let nodes = data.nodes;
  const note = nodes.length > MAX_NODES ? ` (showing the ${MAX_NODES} nearest of ${nodes.length}: lower the depth)` : "";
  nodes = [...nodes].sort((a, b) => (a.depth ?? 0) - (b.depth ?? 0)).slice(0, MAX_NODES);
  const keep = new Set(nodes.map(nodeId));
  const edges = data.edges.filter(e => keep.has(nodeId(e.source)) && keep.has(nodeId(e.target)));
  const start = nodeId(data.start || nodes[0] || {});
  const side = sideOf(data);
  const byId = new Map(nodes.map(n => [nodeId(n), n]));
  // a clear direct step from the start or one of its copies into an unmasked copy carries the values in clear
  const alarm = e => {
    const target = byId.get(nodeId(e.target)), source = byId.get(nodeId(e.source));
    return e.kind === "direct" && !e.masking && statusOf(target, side(target)) === "unmasked" && ["start", "copy"].includes(source.reach);
  };
  const names = shortNames([...new Set(nodes.map(n => n.dataset))]);
  const summary = $("summary");
  const w = data.window;
  if (summary) {
    summary.innerHTML = `${plural(nodes.length, "column")} in ${plural(Object.keys(names).length, "dataset")}, ${plural(edges.length, "edge")}<span class="note">${esc(note)}</span>`
      + (data.nodes.some(n => n.reach) ? ` · ${reachSummary(reachCounts(data, side), data.direction)}` : "")
      + (w && (w.since || w.until) ? ` · window ${w.since ? esc(when(w.since)) : "any time"} – ${w.until ? esc(when(w.until)) : "now"}` : "");
  }
  const compound = nodes.length <= BIG_GRAPH;
  const label = n => compound ? String(n.column) : `${names[n.dataset]} ${n.column}`;
  // in a box, every column is as wide as the widest label and the box as wide as its title
  const boxWidth = {};
  if (compound) {
    for (const [d, title] of Object.entries(names)) boxWidth[d] = textWidth(title, LABEL_PX, "bold") + 4 - 2 * BOX_PAD;
    for (const n of nodes) boxWidth[n.dataset] = Math.max(boxWidth[n.dataset], textWidth(label(n)) + 18, 48);
  }
  const width = n => compound ? boxWidth[n.dataset] : Math.max(48, textWidth(label(n)) + 18);
  const elements = [
    ...(compound ? Object.entries(names) : []).map(([d, label]) => ({data: {id: "ds:" + d, label, dataset: d, w: 10}})),
    ...nodes.map(n => ({data: {id: nodeId(n), parent: compound ? "ds:" + n.dataset : undefined, label: label(n), dataset: n.dataset,
                               column: n.column, w: width(n), start: nodeId(n) === start ? 1 : 0,
                               status: statusOf(n, side(n)), reach: n.reach || "", masking: n.masking || "",
                               via: (n.via || []).join(", "), side: side(n), before: n.before_window ? 1 : 0}})),
    ...edges.map((e, i) => ({data: {id: `e${i}`, source: nodeId(e.source), target: nodeId(e.target),
                                    label: e.transform + (e.masking ? " (masked)" : ""), kind: e.kind, masking: e.masking ? 1 : 0,
                                    alarm: alarm(e) ? 1 : 0, before: e.before_window ? 1 : 0,
                                    labelled: edges.length <= EDGE_LABELS_UP_TO ? 1 : 0, show: 0, mx: 0, my: 0,
                                    expression: e.expression || "", query: e.query_id || "", at: e.captured_at || ""}})),
  ];
  // left to right, so the graph uses the width; dagre's network simplex takes ~11 s on 500 nodes, longest-path ~1 s
  const cy = mountGraph(elements, {name: "dagre", rankDir: "LR", nodeSep: 22, rankSep: 70, edgeSep: 6,
                                   ranker: nodes.length > BIG_GRAPH ? "longest-path" : "network-simplex"}, start, nodes.length);
  cy.on("tap", "node[column]", ev => select(cy, ev.target, opts));
  cy.on("tap", ev => { if (ev.target === cy) select(cy, null, opts); });
  // hovering a column shows its paths while nothing is picked by a click
  cy.on("mouseover", "node[column]", ev => { if (!cy.scratch("picked")) mark(cy, ev.target); });
  cy.on("mouseout", "node[column]", () => { if (!cy.scratch("picked")) mark(cy, null); });
  if (compound && !window.LINEAGE_STATIC) {
    cy.on("tap", "node", ev => { if (ev.target.isParent()) toggleDataset(cy, ev.target); });
  }
  graphTable(nodes, edges, names, opts, side);
  return cy;
}

/**
 * Lay ``elements`` out in #graph (sized to the window first), keep boxes and labels apart, and open a
 * readable view around the node ``startId``; zoom buttons, wheel, tooltips and (when needed) the minimap.
 */
function mountGraph(elements, layout, startId, nodeCount) {
  const container = $("graph");
  sizeFrame(container);
  const cy = cytoscape({container, elements, style: GRAPH_STYLE, userZoomingEnabled: false, boxSelectionEnabled: false,
                        minZoom: 0.05, maxZoom: 4, layout: {...layout, fit: false}});
  graphs.push(cy);
  window.lineageGraph = cy;  // for tests and the console
  cy.nodes(":childless").forEach(n => { n.scratch("home", {...n.position()}); });
  arrange(cy);
  placeEdgeLabels(cy);
  const focus = cy.getElementById(startId);
  const fits = readableView(cy, focus);
  wheelZoom(cy, container);
  zoomButtons(cy, focus);
  hover(cy);
  if (nodeCount > MINIMAP_OVER || !fits) minimap(cy);
  return cy;
}

/** The graph frame's height: the rest of the window below its top, so frame and minimap are on screen. */
function sizeFrame(container) {
  const top = container.getBoundingClientRect().top + window.scrollY;
  const room = window.innerHeight - top - 16;
  container.style.height = `${Math.round(room >= MIN_FRAME_PX ? room : Math.max(MIN_FRAME_PX, window.innerHeight - 32))}px`;
}
/** The graph frame sized again (the window, or the page above it, changed). */
function resizeFrame() {
  const cy = window.lineageGraph, container = $("graph");
  if (!cy || cy.destroyed() || !container) return;
  sizeFrame(container);
  cy.resize();
}
window.addEventListener("resize", resizeFrame);

/**
 * Fit the graph when its labels stay readable (READABLE_PX); else the readable zoom around ``focus``, the
 * graph's near end filling the frame (pan, or click the minimap, for the rest). True when all of it is in view.
 */
function readableView(cy, focus) {
  cy.fit(undefined, 24);
  if (cy.zoom() < MIN_READABLE_ZOOM) {
    cy.zoom(MIN_READABLE_ZOOM);
    cy.center(focus.nonempty() ? focus : cy.nodes()[0]);
    fillViewport(cy);
    return false;
  }
  if (cy.zoom() > MAX_FIRST_ZOOM) {
    cy.zoom(MAX_FIRST_ZOOM);
    cy.center();
  }
  return true;
}

/** Pan so the graph fills the canvas: the start of a backward graph sits at the right edge, not mid-way. */
function fillViewport(cy) {
  const bb = cy.elements().renderedBoundingBox(), w = cy.width(), h = cy.height(), m = 16;
  let dx = 0, dy = 0;
  if (bb.w + 2 * m > w) dx = bb.x1 > m ? m - bb.x1 : bb.x2 < w - m ? w - m - bb.x2 : 0;
  else dx = (w - bb.w) / 2 - bb.x1;
  if (bb.h + 2 * m > h) dy = bb.y1 > m ? m - bb.y1 : bb.y2 < h - m ? h - m - bb.y2 : 0;
  else dy = (h - bb.h) / 2 - bb.y1;
  cy.panBy({x: dx, y: dy});
}

/**
 * Bring ``eles`` into view: zoom out as far as they need but never below readable labels, then pan the
 * least (their top first when they are still taller than the frame).
 */
function reveal(cy, eles) {
  const w = cy.width(), h = cy.height(), m = 16;
  let bb = eles.renderedBoundingBox({includeLabels: true});
  const k = Math.min(1, (w - 2 * m) / bb.w, (h - 2 * m) / bb.h);
  if (k < 1 && cy.zoom() > MIN_READABLE_ZOOM) {
    cy.zoom({level: Math.max(MIN_READABLE_ZOOM, cy.zoom() * k), renderedPosition: {x: (bb.x1 + bb.x2) / 2, y: (bb.y1 + bb.y2) / 2}});
    bb = eles.renderedBoundingBox({includeLabels: true});
  }
  const shift = (lo, hi, size) => lo < m ? m - lo : hi > size - m ? Math.max(m - lo, size - m - hi) : 0;
  cy.panBy({x: shift(bb.x1, bb.x2, w), y: shift(bb.y1, bb.y2, h)});
}

const overlap = (a, b, gap = 0) => a.x1 < b.x2 + gap && b.x1 < a.x2 + gap && a.y1 < b.y2 + gap && b.y1 < a.y2 + gap;
/** The box of an element's label(s) alone, in model units. */
const labelBox = el => el.boundingBox({includeNodes: false, includeEdges: false, includeLabels: true, includeOverlays: false});

/**
 * Keep each dataset box, its title included, clear of the boxes above it: from the top of the graph down, a
 * box stays where the layout put it (its columns' ``home``) or moves down just enough. Expanding a box so
 * pushes the boxes under it down, and collapsing it lets them come back.
 */
function arrange(cy) {
  const boxes = cy.nodes(":parent");
  if (boxes.empty()) return;
  cy.nodes(":childless").forEach(n => { const home = n.scratch("home"); if (home) n.position(home); });
  const items = boxes.map(b => ({b, bb: {...b.boundingBox({includeLabels: true, includeOverlays: false})}}))
    .sort((p, q) => p.bb.y1 - q.bb.y1);
  const placed = [];
  for (const it of items) {
    let dy = 0;
    for (const p of placed) {
      if (it.bb.x1 < p.bb.x2 + BOX_GAP && p.bb.x1 < it.bb.x2 + BOX_GAP) dy = Math.max(dy, p.bb.y2 + BOX_GAP - it.bb.y1);
    }
    if (dy > 0) {
      it.b.children().shift({x: 0, y: dy});
      it.bb.y1 += dy;
      it.bb.y2 += dy;
    }
    placed.push(it);
  }
}

/**
 * Put each edge label where it covers no column, no box title and no other label: the middle of its edge,
 * else nearer one end. An edge with no free place keeps its words in the tooltip and the table.
 */
function placeEdgeLabels(cy) {
  const taken = [...cy.nodes(":childless").map(n => n.boundingBox({includeLabels: false})), ...cy.nodes(":parent").map(labelBox)];
  cy.edges("[labelled = 1]").forEach(e => {
    const s = e.sourceEndpoint(), t = e.targetEndpoint();
    e.data("show", 1);
    const spot = [0.5, 0.38, 0.62, 0.26, 0.74, 0.14, 0.86].find(f => {
      e.data({mx: (f - 0.5) * (t.x - s.x), my: (f - 0.5) * (t.y - s.y)});
      const bb = labelBox(e);
      if (taken.some(o => overlap(o, bb, 2))) return false;
      taken.push(bb);
      return true;
    });
    if (spot === undefined) e.data({show: 0, mx: 0, my: 0});
  });
}

function zoomAround(cy, factor, at) {
  const level = Math.min(cy.maxZoom(), Math.max(cy.minZoom(), cy.zoom() * factor));
  cy.zoom({level, renderedPosition: at || {x: cy.width() / 2, y: cy.height() / 2}});
}

/** One wheel notch zooms by 20% around the pointer (cytoscape's own step depends on the device). */
function wheelZoom(cy, container) {
  container.addEventListener("wheel", ev => {
    ev.preventDefault();
    const delta = ev.deltaMode === 1 ? ev.deltaY * 33 : ev.deltaMode === 2 ? ev.deltaY * 400 : ev.deltaY;
    const factor = Math.min(2, Math.max(0.5, Math.pow(1.2, -delta / 100)));
    const box = container.getBoundingClientRect();
    zoomAround(cy, factor, {x: ev.clientX - box.left, y: ev.clientY - box.top});
  }, {passive: false});
}

function zoomButtons(cy, focus) {
  $("zoom-in").onclick = () => zoomAround(cy, 1.25);
  $("zoom-out").onclick = () => zoomAround(cy, 0.8);
  $("zoom-fit").onclick = () => { if (!readableView(cy, focus)) minimap(cy); };
  $("zoom-reset").onclick = () => { cy.zoom(1); cy.center(focus.nonempty() ? focus : undefined); };
}

function hover(cy) {
  const show = (ev, text) => {
    const at = ev.originalEvent;  // events emitted by code have no pointer: no tooltip
    if (!at) return;
    tip.textContent = text;
    tip.hidden = false;
    tip.style.left = (at.clientX + 12) + "px";
    tip.style.top = (at.clientY + 12) + "px";
  };
  cy.on("mouseover", "edge", ev => {
    const d = ev.target.data();
    show(ev, `${d.label} (${d.kind})${d.expression ? ": " + d.expression : ""}${d.query ? `\n${d.query} ${when(d.at)}` : ""}`
             + (d.before ? "\nwritten before the window" : ""));
  });
  cy.on("mouseover", "node", ev => {
    const d = ev.target.data();
    const notes = reachNotes(d);
    show(ev, d.column === undefined ? d.dataset : `${d.dataset}\n[${d.column}]${notes.length ? "\n" + notes.join("; ") : ""}`);
  });
  cy.on("mouseout", "node, edge", () => { tip.hidden = true; });
}

/**
 * A dataset box shows the columns on the path; a tap adds the dataset's other columns (dashed, in schema
 * order, below them; the boxes under it move down to make room) and a second tap takes them away again.
 */
async function toggleDataset(cy, box) {
  const extra = box.children(".extra");
  if (extra.nonempty()) {
    cy.remove(extra);
    box.data("expanded", 0);
    relayout(cy, box);
    return;
  }
  const dataset = box.data("dataset");
  let schema;
  try { schema = await (await fetch(`/api/schema?dataset=${enc(dataset)}`)).json(); } catch (err) { return; }
  if (cy.destroyed() || box.removed() || box.children(".extra").nonempty()) return;
  const kids = box.children(), homes = kids.map(n => n.scratch("home"));
  const shown = new Set(kids.map(n => n.data("column")));
  const x = (Math.min(...homes.map(h => h.x)) + Math.max(...homes.map(h => h.x))) / 2, y = Math.max(...homes.map(h => h.y));
  const w = kids[0].data("w");
  const more = (schema.columns || []).filter(c => !shown.has(c.name));
  const added = cy.add(more.map((c, i) => ({group: "nodes", classes: "extra",
    data: {id: `extra:${dataset}\u0000${c.name}`, parent: box.id(), label: c.name, dataset, column: c.name, extra: 1,
           w, tw: w - 8, start: 0, status: "", reach: "", masking: "", via: "", side: "", before: 0},
    position: {x, y: y + ROW * (i + 1)}})));
  added.forEach(n => { n.scratch("home", {...n.position()}); });
  box.data("expanded", 1);
  relayout(cy, box);
}

/** After ``box`` grew or shrank: boxes apart again, edge labels placed again, the box in view, the minimap
 * drawn again (or shown, now that the graph is larger than the frame). */
function relayout(cy, box) {
  arrange(cy);
  placeEdgeLabels(cy);
  reveal(cy, box);
  const bb = cy.elements().renderedBoundingBox();
  if (cy.scratch("minimap") || bb.x1 < 0 || bb.y1 < 0 || bb.x2 > cy.width() || bb.y2 > cy.height()) minimap(cy);
}

/** Highlight ``node``'s upstream and downstream paths and dim the rest (null clears), as a click does. */
function select(cy, node, opts) {
  cy.scratch("picked", node || null);
  mark(cy, node);
  showSelection(node, opts);
}

function mark(cy, node) {
  cy.batch(() => {
    cy.elements().removeClass("dim hl sel");
    if (!node) return;
    const path = node.predecessors().union(node.successors()).union(node);
    const kept = path.union(path.nodes().parents());
    cy.elements().not(kept).addClass("dim");
    path.addClass("hl");
    node.addClass("sel");
  });
}

function showSelection(node, opts) {
  const panel = $("selection");
  if (!panel) return;
  if (!node) { panel.textContent = "Click a column to highlight where it comes from and where it goes; click the background to clear."; return; }
  const d = node.data();
  const up = node.predecessors("node").length, down = node.successors("node").length;
  const links = window.LINEAGE_STATIC ? "" :
    ` · <a id="recentre" href="${columnHref(d.dataset, d.column, opts.query)}">re-centre the graph here</a>
      · <a href="${impactHref(d.dataset, d.column)}">impact</a> · <a href="#/dataset/${enc(d.dataset)}">dataset</a>`;
  panel.innerHTML = `<b class="mono">${esc(d.dataset)} [${esc(d.column)}]</b>: ${plural(up, "column")} upstream, ${plural(down, "column")} downstream on this graph${links}`;
}

/**
 * A small overview of the whole graph on a plain canvas; the rectangle is the main view; click to move there.
 * Called again (the graph changed), it draws the graph again.
 */
function minimap(cy) {
  let map = cy.scratch("minimap");
  if (!map) {
    const box = $("minimap");
    box.hidden = false;
    const canvas = document.createElement("canvas");
    canvas.width = box.clientWidth; canvas.height = box.clientHeight;
    box.prepend(canvas);
    map = {canvas, z: 1, ox: 0, oy: 0};
    const view = $("minimap-view");
    let queued = false;
    map.update = () => {
      queued = false;
      const e = cy.extent();
      Object.assign(view.style, {left: `${e.x1 * map.z + map.ox}px`, top: `${e.y1 * map.z + map.oy}px`,
                                 width: `${e.w * map.z}px`, height: `${e.h * map.z}px`});
    };
    cy.on("viewport", () => { if (!queued) { queued = true; requestAnimationFrame(map.update); } });
    canvas.onclick = ev => {
      const at = {x: (ev.offsetX - map.ox) / map.z, y: (ev.offsetY - map.oy) / map.z}, k = cy.zoom();
      cy.pan({x: cy.width() / 2 - at.x * k, y: cy.height() / 2 - at.y * k});
    };
    cy.scratch("minimap", map);
  }
  const {canvas} = map, bb = cy.elements().boundingBox(), pad = 4;
  const z = map.z = Math.min((canvas.width - 2 * pad) / bb.w, (canvas.height - 2 * pad) / bb.h);
  const ox = map.ox = pad - bb.x1 * z + (canvas.width - 2 * pad - bb.w * z) / 2;
  const oy = map.oy = pad - bb.y1 * z + (canvas.height - 2 * pad - bb.h * z) / 2;
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  const rect = (n, fill) => {
    const b = n.boundingBox({includeLabels: false});
    g.fillStyle = fill;
    g.fillRect(b.x1 * z + ox, b.y1 * z + oy, Math.max(1, b.w * z), Math.max(1, b.h * z));
  };
  cy.nodes(":parent").forEach(n => rect(n, "#e8edf2"));
  g.strokeStyle = "#ccc"; g.lineWidth = 0.5; g.beginPath();
  cy.edges().forEach(e => {
    const s = e.source().position(), t = e.target().position();
    g.moveTo(s.x * z + ox, s.y * z + oy); g.lineTo(t.x * z + ox, t.y * z + oy);
  });
  g.stroke();
  cy.nodes(":childless").forEach(n => rect(n, n.data("start") ? "#e0b000" : n.data("status") === "unmasked" ? "#c0392b" : "#8aa1b8"));
  map.update();
}

/** The same graph as a table, for keyboards and screen readers: each column with what it is to the start (reachNotes). */
function graphTable(nodes, edges, names, opts, side) {
  const body = $("graph-table-body");
  if (!body) return;
  const link = (ds, col) => window.LINEAGE_STATIC ? `${esc(ds)} [${esc(col)}]`
    : `<a href="${columnHref(ds, col, opts.query)}" title="${esc(ds)}">${esc(names[ds] || ds)} [${esc(col)}]</a>`;
  body.innerHTML = `<table id="edges-table"><thead><tr><th>from</th><th>to</th><th>transform</th><th>kind</th><th>masked</th><th>expression</th><th>captured</th></tr></thead><tbody>
    ${edges.map(e => `<tr><td>${link(e.source.dataset, e.source.column)}</td><td>${link(e.target.dataset, e.target.column)}</td>
      <td>${esc(e.transform)}</td><td>${esc(e.kind)}</td><td>${e.masking ? "masked" : ""}</td><td><code>${esc(e.expression || "")}</code></td>
      <td>${e.before_window ? "before the window: " : ""}${esc(when(e.captured_at))}</td></tr>`).join("")}</tbody></table>
    <p>${plural(nodes.length, "column")}: ${nodes.map(n => {
      const notes = reachNotes({...n, via: (n.via || []).join(", "), side: side(n), before: n.before_window});
      return link(n.dataset, n.column) + (notes.length ? ` <small>(${esc(notes.join("; "))})</small>` : "");
    }).join(", ")}</p>`;
}

