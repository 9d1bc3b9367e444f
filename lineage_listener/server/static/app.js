// lineage-listener UI: hash routes over the read API; graphs drawn by cytoscape.js + dagre (loaded on graph pages only).
//
// Every navigation starts a Nav: its AbortController cancels the previous page's requests, and a response
// that arrives for an older Nav is dropped (a slow earlier answer never draws over a later page). The old
// page's cytoscape instances are destroyed before the next page draws.
"use strict";
const view = document.getElementById("view");
const tip = document.getElementById("tooltip");
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
const PAGE = 50;
const STATUS_WORDS = {unmasked: "unmasked (clear copy)", partly: "partly masked", masked: "masked on every path"};
// what a column's ``reach`` (and a copy's ``masking``) says, on hover; docs/reference/semantics.md, copies and influence
const COPY_WORDS = {unmasked: "unmasked copy of the start", partly: "partly masked copy of the start",
                    masked: "masked copy of the start (masked on every path)"};
// the API's parameter names in the words of the form's fields
const FIELD_WORDS = {maxLevels: "depth", depth: "depth", start: "from", end: "to", since: "from", until: "to",
                     directOnly: "direct only", direction: "direction", offset: "page", limit: "page size"};

// ---------------------------------------------------------------- helpers
function esc(s) { return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }
function enc(s) { return encodeURIComponent(s); }
function $(id) { return document.getElementById(id); }
/** A store timestamp (naive UTC, ISO) as "2026-11-23 20:35:25 UTC". */
function when(t) {
  if (!t) return "";
  const m = String(t).match(/^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)/);
  return m ? `${m[1]} ${m[2]} UTC` : String(t);
}
function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s - m * 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}
/** A count and its noun: plural(1, "query") is "1 query", plural(2, "query") "2 queries", plural(3, "batch") "3 batches". */
function plural(n, word) { return `${n.toLocaleString("en")} ${n === 1 ? word : plurals(word)}`; }
/** The plural of the nouns the pages count: "copy" -> "copies", "batch" -> "batches", "run" -> "runs". */
function plurals(word) {
  if (/[^aeiou]y$/.test(word)) return word.slice(0, -1) + "ies";
  if (/(s|x|z|ch|sh)$/.test(word)) return word + "es";
  return word + "s";
}
function datasetLink(d) { return `<a href="#/dataset/${enc(d)}" title="${esc(d)}">${esc(d)}</a>`; }
function columnHref(ds, col, query) { return `#/column/${enc(ds)}/${enc(col)}${query ? "?" + query : ""}`; }
function impactHref(ds, col, query) { return `#/impact/${enc(ds)}/${enc(col)}${query ? "?" + query : ""}`; }
function setTitle(...parts) { document.title = [...parts.filter(Boolean), "lineage-listener"].join(" · "); }

// ---------------------------------------------------------------- navigation and requests
class Stale extends Error {}
class ApiError extends Error {
  constructor(status, detail) {
    const text = typeof detail === "string" ? detail : (detail && detail.error) || JSON.stringify(detail);
    super(inFieldWords(text));
    this.status = status;
    const hint = typeof detail === "object" && detail && detail.closest ? detail.closest
      : ((text.match(/closest known: (.*)$/) || [])[1] || "").split(", ").filter(Boolean);
    this.closest = hint;
  }
}
function inFieldWords(text) {
  return String(text).replace(/^bad parameter /, "").replace(/\b(maxLevels|directOnly|start|end|since|until|depth|offset|limit)\b(?=:)/g,
    name => FIELD_WORDS[name] || name).replace(/^bad time/, "bad time").replace(/--since/g, "from").replace(/--until/g, "to");
}

let nav = null;
function newNav() {
  if (nav) nav.ctrl.abort();
  destroyGraphs();
  delete document.body.dataset.view;
  const n = {id: (nav ? nav.id : 0) + 1, ctrl: new AbortController(), hash: location.hash || "#/"};
  n.live = () => nav === n;
  nav = n;
  return n;
}
/** GET a JSON body for navigation ``n``; throws Stale when ``n`` is no longer the current page. */
async function getJSON(n, url) {
  let r, body;
  try {
    r = await fetch(url, {signal: n.ctrl.signal});
    body = await r.json();
  } catch (err) {
    if (!n.live() || err.name === "AbortError") throw new Stale();
    throw err;
  }
  if (!n.live()) throw new Stale();
  if (!r.ok) throw new ApiError(r.status, body.detail);
  return body;
}
function done(n) { if (n.live()) document.body.dataset.view = n.hash; }  // tests wait for this

// ---------------------------------------------------------------- graph libraries, loaded on graph pages only
let libsLoading = null;
function loadGraphLibs() {
  if (window.cytoscape && window.dagre) return Promise.resolve();
  if (!libsLoading) {
    const load = src => new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = src; s.onload = ok; s.onerror = () => fail(new Error(`could not load ${src}`));
      document.head.appendChild(s);
    });
    libsLoading = load("/static/vendor/cytoscape.min.js").then(() => load("/static/vendor/dagre.min.js"))
      .then(() => load("/static/vendor/cytoscape-dagre.js"));
  }
  return libsLoading;
}

let graphs = [];  // cytoscape instances of the current page (graph and minimap)
function destroyGraphs() {
  for (const g of graphs) g.destroy();
  graphs = [];
  window.lineageGraph = null;
  tip.hidden = true;
}

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

// ---------------------------------------------------------------- controls shared by graph views
function timeHelp() { return `<span class="help">UTC · 2026-11-23, 2026-11-23T19:49:25, or an age: 30s, 24h, 7d</span>`; }
/** The window and depth fields of a graph page's form, filled from its URL query ``p`` (``windowQuery``). */
function windowFields(p) {
  return `<label>from <input id="from" type="text" size="20" placeholder="any time" value="${esc(p.get("from") ?? "")}"></label>
      <label>to <input id="to" type="text" size="20" placeholder="now" value="${esc(p.get("to") ?? "")}"></label>
      ${timeHelp()}
      <label>depth <input id="depth" type="text" inputmode="numeric" size="4" placeholder="all" value="${esc(p.get("depth") ?? "")}"></label>`;
}
/**
 * The time window and depth in a page's URL, in the form's words: ``from``, ``to``, ``depth`` (the API's
 * names ``start``/``since``, ``end``/``until`` and ``maxLevels`` are read too), empty values left out.
 */
function windowQuery(q) {
  const p = new URLSearchParams();
  for (const [key, ...aliases] of [["from", "start", "since"], ["to", "end", "until"], ["depth", "maxLevels"]]) {
    const value = [key, ...aliases].map(k => (q.get(k) || "").trim()).find(Boolean);
    if (value) p.set(key, value);
  }
  return p;
}
/** The form's window and depth fields as a URL query (windowQuery's words), or null when the depth is not a number. */
function windowForm() {
  const p = new URLSearchParams();
  for (const key of ["from", "to", "depth"]) if ($(key).value.trim()) p.set(key, $(key).value.trim());
  if (p.has("depth") && !/^\d+$/.test(p.get("depth"))) {
    fieldError("depth", "a whole number of hops, 0 or more (empty: all)");
    return null;
  }
  return p;
}
const LINEAGE_NAMES = {from: "start", to: "end", depth: "maxLevels"};
const IMPACT_NAMES = {from: "since", to: "until", depth: "depth"};
/** A page query in the API's parameter names (``names``: LINEAGE_NAMES or IMPACT_NAMES); other keys as they are. */
function apiQuery(p, names) {
  const out = new URLSearchParams();
  for (const [k, v] of p) out.set(names[k] || k, v);
  return out;
}
/** Mark the form field ``id`` invalid and say why beside it. */
function fieldError(id, message) {
  const input = $(id);
  if (!input) return;
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", `${id}-error`);
  let note = $(`${id}-error`);
  if (!note) {
    note = document.createElement("span");
    note.id = `${id}-error`;
    note.className = "field-error";
    note.setAttribute("role", "alert");
    input.after(note);
  }
  note.textContent = message;
}
/**
 * An API answer about a field of the window form goes beside that field: a bad time (the field holding the
 * value), from after to, a bad depth. True when it did; other errors are the caller's.
 */
function blameField(err) {
  if (err instanceof Stale) return false;
  const bad = err.message.match(/^bad time '([^']*)': (?:cannot read time '[^']*': )?(.*)$/);
  if (bad) {
    const id = ["from", "to"].find(k => $(k) && $(k).value.trim() === bad[1]) || "from";
    fieldError(id, `not a time: ${bad[2]}`);
    return true;
  }
  if (/^from .* is after to /.test(err.message)) {
    fieldError("from", "later than “to”");
    return true;
  }
  if (/^depth: /.test(err.message)) {
    fieldError("depth", err.message.replace(/^depth: /, ""));
    return true;
  }
  return false;
}
/**
 * The notice for a time window that leaves captures out (all of them, or some steps): the API's
 * ``window.outside.message``; empty when ``outside`` is null.
 */
function windowNote(answer) {
  const outside = answer && answer.window && answer.window.outside;
  return outside && outside.message ? `<p class="window-note" id="window-note" role="status">${esc(outside.message)}</p>` : "";
}
// the copies a graph draws without a masking colour: upstream (the start is a copy of them) and those written before the window
const COPY_LEGEND = {backward: "the start is a copy of it (direct steps)", forward: "a copy written before the window",
                     both: "the start is a copy of it, or a copy written before the window"};
/** The graph legend: edges, masking colours (a copy's, downstream), influence and hops before the window. */
function legend(direction) {
  return `<div class="legend" id="legend"><span>── direct (carries values: a copy)</span><span>- - - indirect (filter, join, group key)</span>
      <span class="masked">green: masked</span>${direction === "backward" ? ""
        : `<span class="alarm">red: unmasked copy of the start</span><span class="partly">orange: partly masked copy</span>`}
      <span><span class="lg-copy">blue border</span>: ${COPY_LEGEND[direction] || COPY_LEGEND.both}</span>
      <span><span class="lg-influenced">dotted</span>: influenced only, not a copy</span>
      <span id="legend-before"><span class="lg-before">faded, italic</span>, ○─: written before the window</span>
      <span>hover for names and expressions</span></div>`;
}
function errorBox(err, hintHref) {
  if (err instanceof Stale) throw err;
  const links = (err.closest || []).map(h => `<a href="${hintHref ? hintHref(h) : "#"}">${esc(h)}</a>`).join(", ");
  return `<div class="error" role="alert">${esc(err.message.replace(/; closest known: .*$/, ""))}${links ? `<br>did you mean ${links}?` : ""}</div>`;
}

// ---------------------------------------------------------------- views
async function home(n, q, offset, size) {
  setTitle(q ? `search “${q}”` : "datasets");
  const p = new URLSearchParams({q: q || "", offset, limit: size, what: q ? "all" : "datasets"});
  const r = await getJSON(n, `/api/search?${p}`);
  const pager = (total, key) => {
    if (total <= size) return "";
    const href = o => `#/${q ? "search" : ""}?${new URLSearchParams({...(q ? {q} : {}), offset: o, ...(size !== PAGE ? {limit: size} : {})})}`;
    return `<p class="pager">${offset > 0 ? `<a id="prev-${key}" href="${href(Math.max(0, offset - size))}">← previous</a>` : ""}
      showing ${Math.min(total, offset + 1)}–${Math.min(total, offset + size)} of ${total.toLocaleString("en")}
      ${offset + size < total ? `<a id="next-${key}" href="${href(offset + size)}">next →</a>` : ""}</p>`;
  };
  let html = `<h2>${q ? `Datasets and columns matching “${esc(q)}”` : "Datasets"}</h2>
    <p class="count" id="datasets-count">${plural(r.datasets_total, "dataset")}</p>
    <table id="datasets"><thead><tr><th>dataset</th><th>kind</th><th>format</th><th>columns</th><th>last seen</th></tr></thead><tbody>
    ${r.datasets.map(d => `<tr><td>${datasetLink(d.dataset)}${similar(d)}</td><td>${esc(d.kind)}</td><td>${esc(d.format)}</td>
      <td>${d.columns}</td><td>${esc(when(d.last_seen))}</td></tr>`).join("")}</tbody></table>${pager(r.datasets_total, "datasets")}`;
  if (q) {
    html += `<h3 id="columns-count">${plural(r.columns_total, "column")}</h3>
      <table id="column-results"><thead><tr><th>column</th><th>type</th><th>dataset</th><th></th></tr></thead><tbody>
      ${r.columns.map(c => `<tr><td><a class="column" href="${columnHref(c.dataset, c.column)}">${esc(c.column)}</a>${similar(c)}</td><td>${esc(c.type)}</td>
        <td>${datasetLink(c.dataset)}</td><td><a href="${impactHref(c.dataset, c.column)}">impact</a></td></tr>`).join("")}</tbody></table>
      ${pager(r.columns_total, "columns")}`;
  }
  view.innerHTML = html;
}

async function dataset(n, name) {
  setTitle(name);
  const [d, s] = await Promise.all([getJSON(n, `/api/datasets/${enc(name)}`), getJSON(n, `/api/schema?dataset=${enc(name)}`)]);
  setTitle(d.dataset);
  view.innerHTML = `<h2 class="mono">${esc(d.dataset)}</h2>
    <p>${esc(d.kind)} ${esc(d.format || "")} ${esc(d.location || "")} · first seen ${esc(when(d.first_seen))} · last seen ${esc(when(d.last_seen))}
      · <a id="overview-link" href="#/overview/${enc(d.dataset)}">dataset graph</a></p>
    <h3>Columns <span class="count">(${s.columns.length}, in schema order)</span></h3>
    <label>filter <input id="column-filter" type="search" placeholder="part of a column name"></label>
    <table id="columns"><thead><tr><th>#</th><th>column</th><th>type</th><th>nullable</th><th></th></tr></thead><tbody>
    ${s.columns.map(c => `<tr data-name="${esc(c.name.toLowerCase())}"><td>${c.position}</td><td><a class="column" href="${columnHref(d.dataset, c.name)}">${esc(c.name)}</a></td>
      <td>${esc(c.type)}</td><td>${c.nullable === false ? "no" : c.nullable ? "yes" : ""}</td>
      <td><a href="${impactHref(d.dataset, c.name)}">impact</a></td></tr>`).join("")}</tbody></table>
    <h3>Upstream datasets</h3><ul>${d.upstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Downstream datasets</h3><ul>${d.downstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Recent queries <span class="count">(latest ${d.queries.length})</span></h3>
    <table><thead><tr><th>when</th><th>role</th><th>app</th><th>action</th><th>status</th><th>run</th></tr></thead><tbody>
    ${d.queries.map(q => `<tr class="${q.status === "succeeded" ? "" : "failed"}"><td>${esc(when(q.captured_at))}</td><td>${q.role}</td><td>${esc(q.app_name)}</td><td>${esc(q.action)}</td>
      <td>${esc(q.status)}</td><td><a href="#/run/${enc(q.run_id)}">${esc(q.run_id)}</a></td></tr>`).join("")}</tbody></table>`;
  $("column-filter").oninput = ev => {
    const f = ev.target.value.toLowerCase();
    for (const tr of document.querySelectorAll("#columns tbody tr")) tr.hidden = !tr.dataset.name.includes(f);
  };
}

/** The column page's URL query: ``direction``, ``directOnly`` and the window (windowQuery). */
function columnQuery(q) {
  const direction = q.get("direction") || "backward";
  // direct edges answer "where does this value come from": the default upstream
  const p = new URLSearchParams({direction, directOnly: q.get("directOnly") ?? (direction === "backward" ? "true" : "false")});
  for (const [k, v] of windowQuery(q)) p.set(k, v);
  return p;
}

/** ``p`` without its depth: the window alone, as links to another view carry it. */
function windowOnly(p) {
  const out = new URLSearchParams();
  for (const k of ["from", "to"]) if (p.get(k)) out.set(k, p.get(k));
  return out;
}

async function column(n, ds, col, query) {
  setTitle(col, ds);
  const p = columnQuery(new URLSearchParams(query || ""));
  view.innerHTML = `<h2 class="mono">${datasetLink(ds)} <span>[${esc(col)}]</span></h2>
    <form class="controls" id="controls">
      <label>direction <select id="direction"><option value="backward">backward: where it comes from</option>
        <option value="forward">forward: where it goes</option><option value="both">both</option></select></label>
      ${windowFields(p)}
      <label title="direct edges carry values; indirect ones are filters, join and group keys"><input id="direct" type="checkbox" ${p.get("directOnly") === "true" ? "checked" : ""}> direct edges only</label>
      <button id="apply" type="submit">draw</button>
      <a id="impact-link" href="${impactHref(ds, col, windowOnly(p))}">impact of this column</a>
    </form>
    <div id="errors"></div>
    ${legend(p.get("direction"))}
    <div id="window-box"></div><p id="summary"></p>${graphFrame()}`;
  $("direction").value = p.get("direction");
  $("direction").onchange = () => { $("direct").checked = $("direction").value === "backward"; };
  $("controls").onsubmit = ev => {
    ev.preventDefault();
    const w = windowForm();
    if (!w) return;
    const q = new URLSearchParams({direction: $("direction").value, directOnly: String($("direct").checked)});
    for (const [k, v] of w) q.set(k, v);
    location.hash = columnHref(ds, col, q);
  };
  const url = `/v3/namespaces/default/datasets/${enc(ds)}/columns/${enc(col)}/lineage?${apiQuery(p, LINEAGE_NAMES)}`;
  let data;
  try {
    [data] = await Promise.all([getJSON(n, url), loadGraphLibs()]);
  } catch (err) {
    if (!blameField(err)) {
      $("errors").innerHTML = errorBox(err, h => err.message.includes("has no column") ? columnHref(ds, h, p) : columnHref(h, col, p));
    }
    return;
  }
  if (!n.live()) throw new Stale();
  const startName = data.start || {dataset: ds, column: col};
  setTitle(startName.column, startName.dataset);
  $("window-box").innerHTML = windowNote(data);
  draw(data, {query: p});
}

/** A column's link (its backward graph) and dataset, as the impact tables show them. */
function impactCells(d) {
  return `<td>${d.hop}</td><td>${datasetLink(d.dataset)}</td>
      <td><a href="${columnHref(d.dataset, d.column, "direction=backward&directOnly=true")}">${esc(d.column)}</a></td>`;
}
/** The steps that wrote an impact row's column (``from``; of one ``kind`` only, when given), its applications and runs. */
function writerCells(d, kind) {
  return `<td>${d.from.filter(f => !kind || f.kind === kind).map(f => `<span title="${esc(f.dataset)}">${esc(f.column)}</span> <small>(${esc(f.transform)}${f.masking ? ", masked" : ""}${f.kind === "indirect" ? ", indirect" : ""}${f.before_window ? ", before the window" : ""})</small>`).join("<br>")}</td>
      <td>${d.applications.map(esc).join(", ")}</td><td>${d.runs.map(x => `<a href="#/run/${enc(x)}">${esc(x)}</a>`).join(" ")}</td>`;
}

async function impact(n, ds, col, query) {
  setTitle(`impact of ${col}`, ds);
  const p = windowQuery(new URLSearchParams(query || ""));
  const api = apiQuery(p, IMPACT_NAMES);
  const forward = new URLSearchParams([["direction", "forward"], ["directOnly", "false"], ...windowOnly(p)]);
  view.innerHTML = `<h2 class="mono">Impact of ${datasetLink(ds)} <span>[${esc(col)}]</span></h2>
    <form class="controls" id="controls">
      ${windowFields(p)}
      <button id="apply" type="submit">show</button>
      <a id="csv" href="/api/impact.csv?dataset=${enc(ds)}&column=${enc(col)}&${api}" download>CSV</a>
      <a href="${columnHref(ds, col, forward)}">forward graph</a>
    </form><div id="errors"></div><div id="impact-body"></div>`;
  $("controls").onsubmit = ev => {
    ev.preventDefault();
    const w = windowForm();
    if (w) location.hash = impactHref(ds, col, w);
  };
  // the graph is the forward lineage in the same window and depth: the report's columns and the hops before the window
  const graphQuery = apiQuery(new URLSearchParams([["direction", "forward"], ["directOnly", "false"], ...p]), LINEAGE_NAMES);
  let r, data;
  try {
    [r, data] = await Promise.all([getJSON(n, `/api/impact?dataset=${enc(ds)}&column=${enc(col)}&${api}`),
      getJSON(n, `/v3/namespaces/default/datasets/${enc(ds)}/columns/${enc(col)}/lineage?${graphQuery}`), loadGraphLibs()]);
  } catch (err) {
    if (!blameField(err)) {
      $("errors").innerHTML = errorBox(err, h => err.message.includes("has no column") ? impactHref(ds, h, p) : impactHref(h, col, p));
    }
    return;
  }
  if (!n.live()) throw new Stale();
  setTitle(`impact of ${r.column}`, r.dataset);
  // the report lists copies unmasked first; the table keeps the API's order within each status
  const by = s => r.downstream.filter(d => d.masking === s);
  const unmasked = by("unmasked"), partly = by("partly"), masked = by("masked");
  const apps = new Set([...r.downstream, ...r.influenced].flatMap(d => d.applications));
  const since = r.window ? r.window.since : r.since, until = r.window ? r.window.until : r.until;
  const copyRow = d => `<tr class="st-${d.masking}">${impactCells(d)}<td class="status">${esc(STATUS_WORDS[d.masking])}</td>${writerCells(d, "direct")}</tr>`;
  const influencedRow = d => `<tr class="influenced">${impactCells(d)}<td class="via">${esc(d.via.join(", "))}</td>${writerCells(d)}</tr>`;
  const leak = d => `<li class="mono" data-dataset="${esc(d.dataset)}" data-column="${esc(d.column)}">${datasetLink(d.dataset)} [${esc(d.column)}]</li>`;
  $("impact-body").innerHTML = `
    <p id="impact-summary"><b id="n-copies">${plural(r.downstream.length, "copy")}</b> of it:
      <span class="alarm" id="n-unmasked">${unmasked.length} unmasked</span>,
      <span class="partly" id="n-partly">${partly.length} partly masked</span>,
      <span class="masked" id="n-masked">${masked.length} masked on every path</span>;
      <span id="n-influenced">${plural(r.influenced.length, "column")} influenced only</span>;
      written by ${plural(apps.size, "application")}; ${plural(r.reads.length, "query")} read it
      · window ${since ? esc(when(since)) : "any time"} – ${until ? esc(when(until)) : "now"}</p>
    ${windowNote(r)}
    ${unmasked.length ? `<div class="alarm-box" id="alarm" role="alert"><b>${plural(unmasked.length, "unmasked copy")}</b>: these columns hold its values in clear
      <ul id="alarm-list">${unmasked.map(leak).join("")}</ul></div>` : ""}
    <h3>Copies <span class="count">(${r.downstream.length}: unmasked first, then partly masked, then masked)</span></h3>
    <table id="impact-table"><thead><tr><th>hop</th><th>dataset</th><th>column</th><th>status</th><th>copied from</th><th>applications</th><th>runs</th></tr></thead>
    <tbody>${[...unmasked, ...partly, ...masked].map(copyRow).join("")}</tbody></table>
    <h3>Influenced by it, not copies <span class="count">(${r.influenced.length})</span></h3>
    <p class="help">It decided which rows, groups or branches these columns hold (a filter, a join or group key); they hold none of its values.</p>
    <table id="influenced-table"><thead><tr><th>hop</th><th>dataset</th><th>column</th><th>via</th><th>from</th><th>applications</th><th>runs</th></tr></thead>
    <tbody>${r.influenced.map(influencedRow).join("")}</tbody></table>
    <h3>Reads <span class="count">(${r.reads.length})</span></h3>
    <table id="reads"><thead><tr><th>when</th><th>application</th><th>action</th><th>status</th><th>into</th><th>transforms</th></tr></thead><tbody>
    ${r.reads.map(x => `<tr><td>${esc(when(x.captured_at))}</td><td>${esc(x.app_name)}</td><td>${esc(x.action)}</td><td>${esc(x.status)}</td>
      <td>${x.target_dataset ? datasetLink(x.target_dataset) : "(driver)"}</td><td>${esc((x.transforms || []).join(", "))}</td></tr>`).join("")}</tbody></table>
    <h3>Graph</h3>${legend("forward")}<p id="summary"></p>${graphFrame()}`;
  draw(data, {query: forward});
}

async function overview(n, ds) {
  setTitle("dataset graph", ds);
  const r = await getJSON(n, `/api/overview?dataset=${enc(ds)}`);
  await loadGraphLibs();
  if (!n.live()) throw new Stale();
  view.innerHTML = `<h2 class="mono">Datasets around ${datasetLink(r.dataset)}</h2>
    <p id="summary">${plural(r.nodes.length, "dataset")}, ${plural(r.edges.length, "link")} (${plural(r.depth, "hop")} each way)</p>
    ${graphFrame("dataset graph", false)}
    <table id="overview-table"><thead><tr><th>from</th><th>to</th><th>column edges</th><th>queries</th></tr></thead><tbody>
    ${r.edges.map(e => `<tr><td>${datasetLink(e.source)}</td><td>${datasetLink(e.target)}</td><td>${e.columns}</td><td>${e.queries}</td></tr>`).join("")}</tbody></table>`;
  const names = shortNames(r.nodes.map(x => x.dataset));
  const width = x => Math.max(60, textWidth(names[x.dataset]) + 18);
  const cy = mountGraph([
    ...r.nodes.map(x => ({data: {id: x.dataset, label: names[x.dataset], dataset: x.dataset, start: x.dataset === r.dataset ? 1 : 0,
                                 w: width(x)}})),
    ...r.edges.map((e, i) => ({data: {id: `e${i}`, source: e.source, target: e.target, label: plural(e.columns, "column"),
                                      labelled: 1, show: 0, mx: 0, my: 0}}))],
    {name: "dagre", rankDir: "LR", nodeSep: 14, rankSep: 80}, r.dataset, r.nodes.length);
  cy.on("tap", "node", ev => { location.hash = `#/dataset/${enc(ev.target.data("dataset"))}`; });
}

async function runs(n, offset, size) {
  setTitle("runs");
  const r = await getJSON(n, `/api/browse/runs?offset=${offset}&limit=${size}`);
  const href = o => `#/runs?offset=${o}${size !== PAGE ? `&limit=${size}` : ""}`;
  view.innerHTML = `<h2>Runs</h2><p class="count" id="runs-count">${plural(r.total, "run")}</p>
    <table id="runs"><thead><tr><th>run</th><th>app</th><th>Spark</th><th>started</th><th>duration</th><th>queries</th><th>failed</th><th>status</th></tr></thead><tbody>
    ${r.rows.map(x => `<tr class="${x.failed ? "failed" : ""}"><td><a href="#/run/${enc(x.run_id)}">${esc(x.run_id)}</a></td><td>${esc(x.app_name)}</td>
      <td>${esc(x.spark_version)}</td><td>${esc(when(x.started_at))}</td><td>${x.ended_at ? duration(x.duration_ms) : "running"}</td>
      <td>${x.queries}</td><td>${x.failed || ""}</td><td>${esc(x.status)}</td></tr>`).join("")}</tbody></table>
    ${r.total > size ? `<p class="pager">${offset > 0 ? `<a id="prev-runs" href="${href(Math.max(0, offset - size))}">← previous</a>` : ""}
      showing ${Math.min(r.total, offset + 1)}–${Math.min(r.total, offset + size)} of ${r.total}
      ${offset + size < r.total ? `<a id="next-runs" href="${href(offset + size)}">next →</a>` : ""}</p>` : ""}`;
}

async function streams(n) {
  setTitle("streams");
  const r = await getJSON(n, "/api/streams?limit=1000");
  view.innerHTML = `<h2>Streams</h2><p class="count" id="streams-count">${plural(r.length, "stream")}: each a job however many
    micro-batches it ran; its edges are stored once per plan (a restart with new code adds a plan)</p>
    <table id="streams"><thead><tr><th>stream</th><th>sources</th><th>sinks</th><th>batches</th><th>batch ids</th><th>first batch</th><th>last batch</th><th>plans</th><th>run</th></tr></thead><tbody>
    ${r.map(x => `<tr><td>${esc(x.name || "(unnamed)")}<br><small class="mono">${esc(x.stream_id)}</small></td>
      <td class="sources">${(x.sources || []).map(datasetLink).join("<br>") || `<span class="none">none recorded</span>`}</td>
      <td class="sinks">${(x.targets || []).map(datasetLink).join("<br>") || `<span class="none">console / foreach (no dataset)</span>`}</td>
      <td class="batches">${x.batch_count}</td><td>${x.first_batch_id}–${x.last_batch_id}</td>
      <td>${esc(when(x.first_batch_at))}</td><td class="last-batch">${esc(when(x.last_batch_at))}</td>
      <td>${(x.plans || []).length}</td><td><a href="#/run/${enc(x.run_id)}">${esc(x.run_id)}</a></td></tr>`).join("")}</tbody></table>`;
}

async function run(n, id) {
  setTitle(id, "run");
  const r = await getJSON(n, `/api/runs/${enc(id)}`);
  setTitle(`${r.app_name || ""} ${r.run_id}`, "run");
  const failed = r.queries.filter(q => q.status !== "succeeded").length;
  view.innerHTML = `<h2 class="mono">${esc(r.app_name || "")} <small>${esc(r.run_id)}</small></h2>
    <p>Spark ${esc(r.spark_version)} · ${esc(r.master || "")} · ${esc(when(r.started_at))} – ${r.ended_at ? esc(when(r.ended_at)) : "running"}
     · ${plural(r.queries.length, "query")}${failed ? ` · <span class="alarm">${failed} failed</span>` : ""}</p>
    <table id="queries"><thead><tr><th>captured</th><th>action</th><th>status</th><th>duration</th><th>target</th><th>edges</th><th>SQL</th></tr></thead><tbody>
    ${r.queries.map(q => `<tr class="${q.status === "succeeded" ? "" : "failed"}"><td>${esc(when(q.captured_at))}</td><td>${esc(q.action)}<br><small>${esc(q.command || "")}</small></td>
      <td class="status">${esc(q.status)}${q.error ? `<br><small>${esc(q.error)}</small>` : ""}</td><td>${duration(q.duration_ms)}</td>
      <td>${q.target_dataset ? datasetLink(q.target_dataset) : "(driver)"}</td><td>${q.edges}</td>
      <td>${q.sql_text ? `<pre>${esc(q.sql_text)}</pre>` : `<span class="none">not from SQL</span>`}</td></tr>`).join("")}</tbody></table>`;
}

// ---------------------------------------------------------------- router
async function route() {
  const n = newNav();
  window.scrollTo(0, 0);  // a new page starts at its top, whatever the last one was scrolled to
  const hash = location.hash.slice(1) || "/";
  const [path, query] = hash.split("?");
  const q = new URLSearchParams(query || "");
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  const offset = Math.max(0, parseInt(q.get("offset") || "0", 10) || 0);
  const size = Math.min(500, Math.max(1, parseInt(q.get("limit") || String(PAGE), 10) || PAGE));
  hideSuggestions();
  try {
    if (parts[0] === "dataset") await dataset(n, parts.slice(1).join("/"));
    else if (parts[0] === "column") await column(n, parts[1], parts[2], query);
    else if (parts[0] === "impact") await impact(n, parts[1], parts[2], query);
    else if (parts[0] === "overview") await overview(n, parts.slice(1).join("/"));
    else if (parts[0] === "runs") await runs(n, offset, size);
    else if (parts[0] === "streams") await streams(n);
    else if (parts[0] === "run") await run(n, parts.slice(1).join("/"));
    else if ((window.LINEAGE_PAGES || {})[parts[0]]) await window.LINEAGE_PAGES[parts[0]](n, parts.slice(1), q);
    else await home(n, q.get("q"), offset, size);
  } catch (err) {
    if (err instanceof Stale || !n.live()) return;
    const hint = err.closest && err.closest.length ? h => `#/dataset/${enc(h)}` : null;
    view.innerHTML = errorBox(err, hint);
  }
  done(n);
}

// ---------------------------------------------------------------- search with autocomplete (datasets and columns)
/** A search hit's mark when its name only resembles the words typed (the API's ``match`` is "fuzzy"). */
function similar(hit) { return hit.match === "fuzzy" ? ` <small class="similar" title="a similar name, not the words typed">≈</small>` : ""; }
let suggestCtrl = null, suggestTimer = null;
function hideSuggestions() { const s = $("suggestions"); if (s) { s.hidden = true; s.innerHTML = ""; } }
async function suggest(text) {
  if (suggestCtrl) suggestCtrl.abort();
  if (!text.trim()) { hideSuggestions(); return; }
  const ctrl = suggestCtrl = new AbortController();
  let r;
  try {
    r = await (await fetch(`/api/search?q=${enc(text)}&limit=6`, {signal: ctrl.signal})).json();
  } catch (err) { return; }
  if (ctrl !== suggestCtrl) return;  // a later keystroke asked again
  const box = $("suggestions");
  box.innerHTML = [
    ...r.datasets.map(d => `<li><a href="#/dataset/${enc(d.dataset)}"><span class="kind">dataset</span> ${esc(d.dataset)}${similar(d)}</a></li>`),
    ...r.columns.map(c => `<li><a href="${columnHref(c.dataset, c.column)}"><span class="kind">column</span> <b>${esc(c.column)}</b>${similar(c)} <small>${esc(c.dataset)}</small></a></li>`),
    `<li><a href="#/search?q=${enc(text)}">all ${plural(r.datasets_total, "dataset")} and ${plural(r.columns_total, "column")} matching “${esc(text)}”</a></li>`,
  ].join("");
  box.hidden = false;
}

function showStatic(data) {
  document.querySelector("header form").hidden = true;
  setTitle(data.start.column, data.start.dataset);
  view.innerHTML = `<h2 class="mono">${esc(data.start.dataset)} [${esc(data.start.column)}]</h2>
    <p>${esc(data.direction)} lineage, written ${esc(data.written_at)} by lineage-listener html</p>
    ${legend(data.direction)}${windowNote(data)}<p id="summary"></p>${graphFrame()}`;
  draw(data);
}

if (window.LINEAGE_STATIC) {
  showStatic(window.LINEAGE_STATIC);
} else {
  const input = $("search");
  $("search-form").onsubmit = ev => {
    ev.preventDefault();
    location.hash = `#/search?q=${enc(input.value)}`;
  };
  input.addEventListener("input", () => { clearTimeout(suggestTimer); suggestTimer = setTimeout(() => suggest(input.value), 120); });
  input.addEventListener("keydown", ev => {
    if (ev.key === "ArrowDown") { const a = document.querySelector("#suggestions a"); if (a) { ev.preventDefault(); a.focus(); } }
    if (ev.key === "Escape") hideSuggestions();
  });
  $("suggestions").addEventListener("keydown", ev => {
    const links = [...document.querySelectorAll("#suggestions a")], i = links.indexOf(document.activeElement);
    if (ev.key === "ArrowDown" && i < links.length - 1) { ev.preventDefault(); links[i + 1].focus(); }
    if (ev.key === "ArrowUp") { ev.preventDefault(); (i > 0 ? links[i - 1] : input).focus(); }
    if (ev.key === "Escape") { hideSuggestions(); input.focus(); }
  });
  document.addEventListener("click", ev => { if (!ev.target.closest("#search-form, #suggestions")) hideSuggestions(); });
  history.scrollRestoration = "manual";
  window.addEventListener("hashchange", route);
  route();
}
