// lineage-listener UI, the graph: a lineage payload drawn with cytoscape.js where arrange.js placed it, in a
// frame with a toolbar above it and a side panel beside it (nothing is drawn over the graph); zoom, minimap,
// hover. explore.js adds what a click does (the panel, one more hop, a box opened to its schema, jobs).
"use strict";
const MAX_NODES = 500;
// cytoscape's default font, which the labels are drawn in (GRAPH_STYLE leaves it out: every property a style sets
// costs each element its parse and hash); named here so label widths are measured in it
const FONT = "Helvetica Neue, Helvetica, sans-serif";
const LABEL_PX = 12;       // column and dataset labels, in model units
const EDGE_LABEL_PX = 11;  // transform labels on edges, in model units
const READABLE_PX = 10;    // the first view and "fit" draw no label smaller than this: pan (or use the minimap) instead
const MIN_READABLE_ZOOM = READABLE_PX / Math.min(LABEL_PX, EDGE_LABEL_PX);
const HIDDEN_BELOW_PX = 7; // zoomed out further by hand, labels smaller than this are not drawn (shapes only)
const MAX_FIRST_ZOOM = 1.5;
const MINIMAP_OVER = 50;   // nodes; a graph that does not fit at a readable size gets one too
const MIN_FRAME_PX = 360;  // the graph frame's least height
const JOB = "job:";        // the id prefix of job nodes (explore.js)

/** What other scripts add to graphs: ``marks(nav, datasets)`` resolves to {nodeId: {labels, violations}} for the
 * columns of ``datasets`` (governance.js), ``panel``: functions adding a part to a column's side panel. */
const GRAPH_HOOKS = {marks: null, panel: []};

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

/** A column's words on the graph: a violation's ⚠, its name, the labels it carries (on a line of their own:
 * ``lines``). */
function nodeText(d, lines = false) {
  return `${d.violations ? "⚠ " : ""}${d.name}${d.labels ? `${lines ? "\n" : " "}[${d.labels.split(",").join(", ")}]` : ""}`;
}

/** An edge label's style. */
const EDGE_LABEL = {"label": "data(label)", "font-size": EDGE_LABEL_PX, "min-zoomed-font-size": HIDDEN_BELOW_PX,
                    "text-background-color": "#fff", "text-background-opacity": 1, "text-background-padding": 1};

const GRAPH_STYLE = [
  {selector: "node", style: {"shape": "round-rectangle", "label": "data(label)", "text-valign": "center",
    "font-size": LABEL_PX, "min-zoomed-font-size": HIDDEN_BELOW_PX, "width": "data(w)", "height": LAYOUT.node,
    "background-color": "#dfe9f3", "border-width": 1, "border-color": "#5b7a99", "color": "#111", "z-index": 1}},
  // a dataset's box: a node of its own behind its columns, as large as arrange.js made it (cytoscape's compound
  // nodes would cost more than half the drawing time of a large graph); clear inside, as cytoscape draws every
  // node above every edge and the edges reach its columns
  {selector: "node.box", style: {"shape": "round-rectangle", "background-opacity": 0, "width": "data(bw)", "height": "data(bh)",
    "border-color": "#8aa1b8", "border-width": 1.5, "text-valign": "top", "text-halign": "center", "text-margin-y": -2,
    "font-size": LABEL_PX, "font-weight": "bold", "color": "#1f3b57", "z-index": 0}},
  {selector: "node[start = 1]", style: {"background-color": "#f7d774", "border-width": 2}},
  {selector: "node[reach = 'copy']", style: {"border-width": 2, "border-color": "#2c6fad"}},
  // influenced only (an indirect step on every path): neutral, never a copy's colour
  {selector: "node[reach = 'influenced']", style: {"background-color": "#f1f2f3", "border-color": "#8c959f", "border-width": 2,
    "border-style": "dotted", "color": "#444"}},
  {selector: "node[status = 'unmasked']", style: {"background-color": "#fbd5d0", "border-color": "#c0392b", "border-width": 3}},
  {selector: "node[status = 'partly']", style: {"background-color": "#fde8c8", "border-color": "#d68910", "border-width": 2}},
  {selector: "node[status = 'masked']", style: {"background-color": "#d5f0dc", "border-color": "#1e8449"}},
  {selector: "node[before = 1]", style: {"font-style": "italic", "color": "#666", "background-opacity": 0.45}},
  // governance marks sit outside the border, so the border keeps saying copy, masking or influence
  {selector: "node[labels]", style: {"outline-width": 3, "outline-color": "#8e44ad", "outline-offset": 1, "outline-opacity": 0.9}},
  {selector: "node[violations > 0]", style: {"outline-width": 4, "outline-color": "#c0392b", "outline-style": "dashed",
    "outline-offset": 1, "font-weight": "bold"}},
  {selector: "node.dataset", style: {"height": 38, "text-wrap": "wrap"}},  // the dataset graph: its name, its marks below
  {selector: "node.job", style: {"shape": "cut-rectangle", "background-color": "#eef0f5", "border-color": "#6c7a89",
    "border-width": 1, "color": "#2c3e50", "font-size": LABEL_PX - 1}},
  {selector: "edge", style: {"curve-style": "unbundled-bezier", "edge-distances": "node-position",
    "control-point-distances": "data(cpd)", "control-point-weights": "data(cpw)",
    "source-endpoint": "50% 0%", "target-endpoint": "-50% 0%", "target-arrow-shape": "triangle",
    "width": 1.5, "line-color": "#555", "target-arrow-color": "#555"}},
  // which sides an edge leaves and enters (arrange.js's ``way``): constants, parsed once, not per edge
  {selector: "edge[way = 'back']", style: {"source-endpoint": "-50% 0%", "target-endpoint": "50% 0%"}},
  {selector: "edge[way = 'inner']", style: {"source-endpoint": "50% 0%", "target-endpoint": "50% 0%"}},
  {selector: "edge:loop", style: {"curve-style": "bezier", "source-endpoint": "outside-to-node", "target-endpoint": "outside-to-node"}},
  // an edge's label, where it is drawn: an edge drawn without one is not given its font and background
  {selector: "edge[show = 1]", style: {...EDGE_LABEL, "text-margin-x": "data(mx)", "text-margin-y": "data(my)"}},
  {selector: "edge.hl, edge.peek", style: EDGE_LABEL},
  {selector: "edge.peek", style: {"z-index": 2, "width": 3}},
  {selector: "edge[kind = 'indirect']", style: {"line-style": "dashed", "line-color": "#999", "target-arrow-color": "#999"}},
  {selector: "edge[masking = 1]", style: {"line-color": "#1e8449", "target-arrow-color": "#1e8449", "color": "#1e8449", "width": 2.5}},
  {selector: "edge[alarm = 1]", style: {"line-color": "#c0392b", "target-arrow-color": "#c0392b", "color": "#c0392b", "width": 3}},
  // a conservative guess: a Python function that could not be read (docs/reference/semantics.md, Python code)
  {selector: "edge[guess = 1]", style: {"line-style": "dotted", "line-color": "#9b59b6", "target-arrow-color": "#9b59b6", "width": 2}},
  // a hop written before the window: faded, a hollow circle where it leaves its source
  {selector: "edge[before = 1]", style: {"opacity": 0.55, "source-arrow-shape": "circle", "source-arrow-fill": "hollow",
    "source-arrow-color": "#6b5b95", "arrow-scale": 1.2}},
  // history: a later write replaced the target, so these values are no longer there (docs/reference/semantics.md,
  // Current state); faded, a bar where it ends
  {selector: "edge[history = 1]", style: {"opacity": 0.4, "target-arrow-shape": "tee", "arrow-scale": 1.3}},
  {selector: ".hidden", style: {"display": "none"}},
  {selector: ".dim", style: {"opacity": 0.15}},
  {selector: "node.sel", style: {"border-width": 4, "border-color": "#1f3b57"}},
  {selector: "node.extra", style: {"border-style": "dashed", "background-color": "#fbfcfd", "color": "#666",
    "text-wrap": "ellipsis", "text-max-width": "data(tw)"}},  // as wide as the box's columns: a longer name is cut (hover)
  {selector: "node.explored", style: {"border-style": "dashed", "border-color": "#5b7a99", "background-color": "#eef3f8"}},
  {selector: "node.handle", style: {"shape": "ellipse", "width": 18, "height": 18, "background-color": "#1f3b57", "color": "#fff",
    "font-size": 14, "font-weight": "bold", "border-width": 0, "text-valign": "center", "text-halign": "center", "z-index": 3}},
  {selector: "edge.hl", style: {"width": 3, "z-index": 1}},
];

/**
 * The graph's frame: a toolbar (zoom; ``jobs``: the jobs toggle), the canvas with the side panel beside it (the
 * minimap, the picked column, the ``legend``); with ``table``, the same graph as a table below.
 */
function graphFrame(what = "lineage graph", {table = true, jobs = false, legend = "", hint = ""} = {}) {
  return `<div class="graph-tools" role="toolbar" aria-label="graph">
      <span class="zoom"><button id="zoom-in" title="zoom in">+</button><button id="zoom-out" title="zoom out">−</button>
        <button id="zoom-fit" title="fit the graph, down to readable labels (then pan, or click the minimap)">fit</button><button id="zoom-reset" title="readable size around the start">1:1</button></span>
      ${jobs ? `<label title="the application and query that wrote each step, as nodes between the datasets (click one for its run)"><input id="show-jobs" type="checkbox"> jobs</label>` : ""}
      <span class="help">${hint || "click a column for its details; the + beside a hovered column adds one more hop that way"}</span>
      <span id="graph-note" role="status"></span></div>
    <div class="graph-body"><div id="graph" role="img" aria-label="${esc(what)}${table ? "; the same graph is in the table below" : ""}"></div>
      <aside id="graph-side" aria-label="details"><div id="minimap" hidden><div id="minimap-view"></div></div>
        <section id="selection" class="selection" aria-live="polite">${esc(PANEL_HINT)}</section>${legend}</aside></div>
    ${table ? `<details id="graph-table"><summary>the graph as a table</summary><div id="graph-table-body"></div></details>` : ""}`;
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

/**
 * The graph header's words for reachCounts ``c``: "2 unmasked copies, 0 partly masked, 1 masked on every path · ...".
 * ``directOnly``: indirect edges were not followed, so influence was not computed (and is not "0").
 */
function reachSummary(c, direction, directOnly) {
  const parts = [];
  const notComputed = what => `<span id="${what}-count" class="none" title="only direct edges were followed: untick “direct edges only” to see influence">${what === "influenced" ? "influence" : "influence upstream"} not computed (direct edges only)</span>`;
  if (direction !== "backward") {
    const d = c.down;
    parts.push(d.copies
      ? `<span id="copies-count"><span class="${d.unmasked ? "alarm" : ""}" id="unmasked-count">${plural(d.unmasked, "unmasked copy")}</span>, ${d.partly} partly masked, ${d.masked} masked on every path</span>`
      : `<span id="copies-count">0 copies</span>`,
      directOnly ? notComputed("influenced") : `<span id="influenced-count">${plural(d.influenced, "column")} influenced only</span>`);
  }
  if (direction !== "forward") {
    parts.push(`<span id="sources-count">copied from ${plural(c.up.copies, "column")}</span>`,
      directOnly ? notComputed("influencers") : `<span id="influencers-count">influenced by ${plural(c.up.influenced, "column")}</span>`);
  }
  if (c.before) parts.push(`<span class="before" id="before-count">${plural(c.before, "column")} written before the window</span>`);
  return parts.join(" · ");
}

/** The notes a column's tooltip and the table give: copy or influence, masking, before the window. */
function reachNotes(d) {
  const copy = d.reach === "copy" && (d.side === "down" ? (COPY_WORDS[d.masking] || "copy of the start") : "the start holds a copy of it (direct path)");
  const influenced = d.reach === "influenced" && (d.side === "up" ? `influenced the start via ${d.via} (not a copy)` : `influenced via ${d.via} (not a copy)`);
  return [copy, influenced, d.before && "written before the window", d.explored && `added by one more hop from ${d.explored}`].filter(Boolean);
}

/** A column node's data: ``n`` (a payload node) with its marks (GRAPH_HOOKS.marks) and what it is to the start. */
function columnData(n, extra) {
  return {id: nodeId(n), box: "ds:" + n.dataset, dataset: n.dataset, column: n.column, name: String(n.column),
          start: 0, status: "", reach: "", masking: "", via: "", side: "", before: 0, w: 48, tw: 40, ...extra};
}

/** Give column node data ``d`` its marks (labels carried, violations) and its words and width. */
function marked(d, marks) {
  const m = marks && marks[d.id];
  if (m && m.labels.length) d.labels = m.labels.join(","); else delete d.labels;
  d.violations = m ? m.violations.length : 0;
  d.label = nodeText(d);
  return d;
}

/**
 * Draw ``data`` (a lineage graph payload: start, direction, nodes, edges, window, queries) into #graph.
 * ``opts.query``: the URL query to keep when re-centring; ``opts.marks``: GRAPH_HOOKS.marks's answer;
 * ``opts.directOnly``: indirect edges were not asked for; ``opts.jobs``: draw jobs between datasets.
 */
function draw(data, opts = {}) {
  let nodes = data.nodes;
  const note = nodes.length > MAX_NODES ? ` (showing the ${MAX_NODES} nearest of ${nodes.length}: narrow the window, or tick direct edges only)` : "";
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
      + (data.nodes.some(n => n.reach) ? ` · ${reachSummary(reachCounts(data, side), data.direction, opts.directOnly)}` : "")
      + (w && (w.since || w.until) ? ` · window ${w.since ? esc(when(w.since)) : "any time"} – ${w.until ? esc(when(w.until)) : "now"}` : "");
  }
  const columns = nodes.map((n, i) => marked(columnData(n, {start: nodeId(n) === start ? 1 : 0, status: statusOf(n, side(n)),
    reach: n.reach || "", masking: n.masking || "", via: (n.via || []).join(", "), side: side(n), before: n.before_window ? 1 : 0, ord: i}), opts.marks));
  const elements = [
    ...Object.entries(names).map(([d, label]) => ({classes: "box", data: {id: "ds:" + d, label, dataset: d, title: label, w: 10, bw: 10, bh: 10}})),
    ...columns.map(data => ({data})),
    ...edges.map((e, i) => ({data: edgeData(`e${i}`, e, alarm(e))})),
  ];
  const cy = mountGraph(elements, start, nodes.length);
  cy.scratch("graph", {data, opts, queries: data.queries || {}, names});
  explore(cy, opts);
  if (opts.jobs) showJobs(cy, true);
  graphTable(nodes, edges, names, opts, side);
  return cy;
}

/** A payload edge ``e`` as edge data (``alarm``: it carries the start's values in clear). */
function edgeData(id, e, alarm) {
  return {id, source: nodeId(e.source), target: nodeId(e.target),
          label: e.transform + (e.masking ? " (masked)" : "") + (e.guess ? " (guess)" : "") + (e.history ? " (history)" : ""),
          guess: e.guess ? 1 : 0, history: e.history ? 1 : 0,
          replaced: e.history ? `history: replaced by ${e.history.query_id || "a later write"} at ${when(e.history.captured_at)}` : "",
          kind: e.kind, masking: e.masking ? 1 : 0, alarm: alarm ? 1 : 0, before: e.before_window ? 1 : 0, show: 0, mx: 0, my: 0,
          cpd: [], cpw: [], way: "fwd", expression: e.expression || "", query: e.query_id || "",
          run: e.run_id || "", at: e.captured_at || ""};
}

/**
 * Lay the graph out again (arrange.js over a copy of its elements) and move its nodes and edges there, in one
 * batch: after a box opened or closed, a hop, the jobs toggle.
 */
function relayout(cy) {
  drawRest(cy);
  const els = cy.elements().map(el => ({data: {...el.data()}, classes: el.classes().join(" ")}));
  const t0 = performance.now();
  const drawing = arrange(els, cy.scratch("layout") || {});
  drawing.ms = performance.now() - t0;
  cy.scratch("drawing", drawing);
  cy.batch(() => {
    for (const el of els) {
      const x = cy.getElementById(el.data.id);
      if (el.position) x.position(el.position);
      else if (el.data.source !== undefined) {
        const {cpd, cpw, way, path, show, mx, my} = el.data;
        if (path) x.data({cpd, cpw, way, path, show, mx, my});
      }
      if (el.data.source === undefined) x.data(el.data.bw ? {bw: el.data.bw, bh: el.data.bh} : {w: el.data.w, tw: el.data.tw});
    }
  });
}

/**
 * Arrange ``elements`` (arrange.js; ``layout``: LAYOUT values to change), draw them in #graph (sized to the window
 * first) and open a readable view around the node ``startId``; zoom buttons, wheel, tooltips and (when needed)
 * the minimap. A graph larger than its view is drawn in two steps (laterElements): what is in view first, the
 * rest right after that frame is on screen; ``cy.scratch("whole")`` resolves once all of it is in the graph.
 */
function mountGraph(elements, startId, nodeCount, layout = {}) {
  const container = $("graph");
  sizeFrame(container);
  const t0 = performance.now();
  const drawing = arrange(elements, layout);
  drawing.ms = performance.now() - t0;
  // the elements come placed (preset) with the view readableViewport chose: a fit here would measure every
  // element with its label before the first frame, for a viewport replaced right after
  const start = elements.find(el => el.data.id === startId);
  const view = readableViewport(drawing.bbox, container.clientWidth, container.clientHeight, start && start.position);
  const later = view.fits ? [] : laterElements(elements, modelView(view, container.clientWidth, container.clientHeight));
  const skip = new Set(later);
  const cy = cytoscape({container, elements: later.length ? elements.filter(el => !skip.has(el)) : elements,
                        style: GRAPH_STYLE, userZoomingEnabled: false, boxSelectionEnabled: false,
                        minZoom: 0.05, maxZoom: 4, zoom: view.zoom, pan: view.pan, layout: {name: "preset", fit: false}});
  cy.scratch("drawing", drawing);
  cy.scratch("layout", layout);
  graphs.push(cy);
  window.lineageGraph = cy;  // for tests and the console
  cy.one("render", () => performance.mark("lineage-graph-drawn"));  // the first frame on screen (bench/ui_bench.py)
  cy.scratch("whole", new Promise(whole => {
    cy.scratch("later", later.length ? {elements: later, whole} : null);
    if (!later.length) whole();
    // after the first frame, once the browser has put it on screen
    else cy.one("render", () => setTimeout(() => drawRest(cy)));
  }));
  // what a reader does with the graph needs all of it: a hover or click before the rest is drawn draws it
  cy.on("tap mouseover", () => drawRest(cy));
  const focus = cy.getElementById(startId);
  if (!view.fits) firstFrameInView(cy);
  wheelZoom(cy, container);
  zoomButtons(cy, focus);
  hover(cy);
  if (nodeCount > MINIMAP_OVER || !view.fits) minimap(cy);
  return cy;
}

/**
 * The elements of a graph larger than its view that its first frame leaves out: nodes and edges wholly outside
 * ``view`` (model units; an edge by the points of its curve and the place of its label, arrange.js), except the
 * nodes an edge in view ends at. Styling an element (its properties parsed, its curve, label and bounds worked
 * out) is most of a large graph's drawing time, in view or not (docs/performance.md, Drawing a graph).
 */
function laterElements(elements, view) {
  const margin = 160;  // model units: an edge's label reaches this far beyond its curve's points
  const v = {x1: view.x1 - margin, x2: view.x2 + margin, y1: view.y1 - margin, y2: view.y2 + margin};
  const inside = (x1, x2, y1, y2) => x2 >= v.x1 && x1 <= v.x2 && y2 >= v.y1 && y1 <= v.y2;
  const kept = new Set(), later = [], edges = [];
  for (const el of elements) {
    if (el.data.source !== undefined) { edges.push(el); continue; }
    const p = el.position, w = el.data.bw || el.data.w || 0, h = el.data.bh || LAYOUT.node * 2;
    if (!p || inside(p.x - w / 2, p.x + w / 2, p.y - h / 2, p.y + h / 2)) kept.add(el.data.id);
  }
  const ends = new Set();
  for (const e of edges) {
    const pts = e.data.path || [];
    const xs = pts.map(q => q.x), ys = pts.map(q => q.y);
    if (!pts.length || inside(Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys))) {
      ends.add(e.data.source); ends.add(e.data.target);
    } else later.push(e);
  }
  for (const el of elements) if (el.data.source === undefined && !kept.has(el.data.id) && !ends.has(el.data.id)) later.push(el);
  return later;
}

/** What a ``w`` x ``h`` frame at viewport ``view`` ({zoom, pan}) shows, in model units. */
function modelView(view, w, h) {
  return {x1: -view.pan.x / view.zoom, x2: (w - view.pan.x) / view.zoom, y1: -view.pan.y / view.zoom, y2: (h - view.pan.y) / view.zoom};
}

/** Add the elements the first frame of ``cy`` left out (mountGraph), once; nothing when they are in already. */
function drawRest(cy) {
  const later = !cy.destroyed() && cy.scratch("later");
  if (!later) return;
  cy.scratch("later", null);
  cy.add(later.elements);
  cy.one("render", () => performance.mark("lineage-graph-whole"));
  later.whole();
}

/**
 * Let the first frame of ``cy``, a graph larger than its view, draw only what is in view. Cytoscape's canvas
 * renderer caches the graph in layers of the whole drawing; only on its first frame does it draw every element
 * into them at once (most of such a graph, out of view), on later frames it draws the view and fills the layers
 * in idle frames. This makes the first frame a later one (the layered texture cache's ``firstGet``, cytoscape
 * 3.34; nothing happens where that is gone). A graph in view whole is drawn whole either way.
 */
function firstFrameInView(cy) {
  const layers = cy.renderer() && cy.renderer().data && cy.renderer().data.lyrTxrCache;
  if (layers && layers.firstGet === true) layers.firstGet = false;
}

/** The graph frame's height: the rest of the window below its top, so frame and side panel are on screen. */
function sizeFrame(container) {
  const top = container.getBoundingClientRect().top + window.scrollY;
  const room = window.innerHeight - top - 16;
  const h = `${Math.round(room >= MIN_FRAME_PX ? room : Math.max(MIN_FRAME_PX, window.innerHeight - 32))}px`;
  container.style.height = h;
  const side = $("graph-side");
  if (side) side.style.height = h;
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
 * The viewport ({zoom, pan, fits}) of a ``w`` x ``h`` frame on a drawing of extent ``bb`` (arrange.js's, not
 * asked of cytoscape): all of it when its labels stay readable (READABLE_PX); else the readable zoom around
 * ``at`` (a model position), the graph's near end filling the frame (pan, or click the minimap, for the rest).
 * ``fits``: all of it is in view.
 */
function readableViewport(bb, w, h, at) {
  const pad = 24;
  const zoom = Math.min((w - 2 * pad) / bb.w, (h - 2 * pad) / bb.h);
  if (zoom < MIN_READABLE_ZOOM) {
    const p = at || {x: bb.x1, y: (bb.y1 + bb.y2) / 2}, z = MIN_READABLE_ZOOM;
    return {zoom: z, pan: filledPan(bb, z, {x: w / 2 - p.x * z, y: h / 2 - p.y * z}, w, h), fits: false};
  }
  const z = Math.min(zoom, MAX_FIRST_ZOOM);
  return {zoom: z, pan: {x: w / 2 - (bb.x1 + bb.x2) / 2 * z, y: h / 2 - (bb.y1 + bb.y2) / 2 * z}, fits: true};
}

/** Set readableViewport on ``cy`` around ``focus``; true when all of the graph is in view. */
function readableView(cy, focus) {
  const v = readableViewport(cy.scratch("drawing").bbox, cy.width(), cy.height(), focus.nonempty() ? focus.position() : null);
  cy.viewport({zoom: v.zoom, pan: v.pan});
  return v.fits;
}

/** The drawing's extent on screen (arrange.js's bounding box at the current zoom and pan). */
function renderedExtent(cy) {
  return extentAt(cy.scratch("drawing").bbox, cy.zoom(), cy.pan());
}
function extentAt(m, z, p) {
  return {x1: m.x1 * z + p.x, x2: m.x2 * z + p.x, y1: m.y1 * z + p.y, y2: m.y2 * z + p.y, w: m.w * z, h: m.h * z};
}

/** ``pan`` moved so the drawing ``m`` at ``zoom`` fills a ``w`` x ``h`` frame: the start of a backward graph sits
 * at the right edge, not mid-way. */
function filledPan(m, zoom, pan, w, h) {
  const bb = extentAt(m, zoom, pan), pad = 16;
  let dx = 0, dy = 0;
  if (bb.w + 2 * pad > w) dx = bb.x1 > pad ? pad - bb.x1 : bb.x2 < w - pad ? w - pad - bb.x2 : 0;
  else dx = (w - bb.w) / 2 - bb.x1;
  if (bb.h + 2 * pad > h) dy = bb.y1 > pad ? pad - bb.y1 : bb.y2 < h - pad ? h - pad - bb.y2 : 0;
  else dy = (h - bb.h) / 2 - bb.y1;
  return {x: pan.x + dx, y: pan.y + dy};
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

/** Tooltips: an edge's transform, expression and query (its label shown while hovered), a node's names. */
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
    ev.target.addClass("peek");
    show(ev, d.tip || `${d.label} (${d.kind})${d.expression ? ": " + d.expression : ""}${d.query ? `\n${d.query} ${when(d.at)}` : ""}`
             + (d.before ? "\nwritten before the window" : "") + (d.replaced ? "\n" + d.replaced : ""));
  });
  cy.on("mouseout", "edge", ev => { ev.target.removeClass("peek"); tip.hidden = true; });
  cy.on("mouseover", "node", ev => {
    const d = ev.target.data();
    if (d.tip) { show(ev, d.tip); return; }
    const notes = reachNotes(d);
    show(ev, d.column === undefined ? d.dataset : `${d.dataset}\n[${d.column}]${d.labels ? `\nlabels: ${d.labels}` : ""}`
             + `${d.violations ? `\n⚠ breaks ${plural(d.violations, "policy rule")}` : ""}${notes.length ? "\n" + notes.join("; ") : ""}`);
  });
  cy.on("mouseout", "node", () => { tip.hidden = true; });
}

/** Highlight ``node``'s upstream and downstream paths and dim the rest (null clears). */
function mark(cy, node) {
  drawRest(cy);
  cy.batch(() => {
    cy.elements().removeClass("dim hl sel");
    if (!node) return;
    const path = node.predecessors().union(node.successors()).union(node);
    const boxes = new Set(path.nodes().map(n => n.data("box")));
    const kept = path.union(cy.nodes(".box").filter(b => boxes.has(b.id()))).union(cy.nodes(".handle"));
    cy.elements().not(kept).addClass("dim");
    path.addClass("hl");
    node.addClass("sel");
  });
}

/**
 * A small overview of the whole graph on a plain canvas in the side panel; the rectangle is the main view;
 * click to move there. Called again (the graph changed), it draws the graph again.
 */
function minimap(cy) {
  let map = cy.scratch("minimap");
  if (!map) {
    const box = $("minimap");
    if (!box) return;
    box.hidden = false;
    const canvas = document.createElement("canvas");
    canvas.width = box.clientWidth; canvas.height = box.clientHeight;
    box.prepend(canvas);
    map = {canvas, z: 1, ox: 0, oy: 0};
    const frame = $("minimap-view");
    let queued = false;
    map.update = () => {
      queued = false;
      const e = cy.extent();
      Object.assign(frame.style, {left: `${e.x1 * map.z + map.ox}px`, top: `${e.y1 * map.z + map.oy}px`,
                                  width: `${e.w * map.z}px`, height: `${e.h * map.z}px`});
    };
    cy.on("viewport", () => { if (!queued) { queued = true; requestAnimationFrame(map.update); } });
    canvas.onclick = ev => {
      const at = {x: (ev.offsetX - map.ox) / map.z, y: (ev.offsetY - map.oy) / map.z}, k = cy.zoom();
      cy.pan({x: cy.width() / 2 - at.x * k, y: cy.height() / 2 - at.y * k});
    };
    cy.scratch("minimap", map);
  }
  const {canvas} = map, {bbox: bb, rects, boxRects, lines} = cy.scratch("drawing"), pad = 4;
  const z = map.z = Math.min((canvas.width - 2 * pad) / bb.w, (canvas.height - 2 * pad) / bb.h);
  const ox = map.ox = pad - bb.x1 * z + (canvas.width - 2 * pad - bb.w * z) / 2;
  const oy = map.oy = pad - bb.y1 * z + (canvas.height - 2 * pad - bb.h * z) / 2;
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  const rect = (b, fill) => {
    g.fillStyle = fill;
    g.fillRect(b.x1 * z + ox, b.y1 * z + oy, Math.max(1, (b.x2 - b.x1) * z), Math.max(1, (b.y2 - b.y1) * z));
  };
  for (const b of boxRects) rect(b, "#e8edf2");
  g.strokeStyle = "#ccc"; g.lineWidth = 0.5; g.beginPath();
  for (const [s, t] of lines) { g.moveTo(s.x * z + ox, s.y * z + oy); g.lineTo(t.x * z + ox, t.y * z + oy); }
  g.stroke();
  const later = new Map(((cy.scratch("later") || {}).elements || []).map(el => [el.data.id, el.data]));
  for (const r of rects) {
    const el = cy.getElementById(r.id), d = el.nonempty() ? el.data() : later.get(r.id) || {};
    rect(r, d.start ? "#e0b000" : d.status === "unmasked" || d.violations ? "#c0392b" : d.labels ? "#8e44ad" : "#8aa1b8");
  }
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
      <td>${esc(e.transform)}${e.guess ? " (guess)" : ""}${e.history ? ` <small class="history">(history: replaced by ${esc(e.history.query_id)}, ${esc(when(e.history.captured_at))})</small>` : ""}</td><td>${esc(e.kind)}</td><td>${e.masking ? "masked" : ""}</td><td><code>${esc(e.expression || "")}</code></td>
      <td>${e.before_window ? "before the window: " : ""}${esc(when(e.captured_at))}</td></tr>`).join("") || emptyRow(7, "no edge")}</tbody></table>
    <p>${plural(nodes.length, "column")}: ${nodes.map(n => {
      const notes = reachNotes({...n, via: (n.via || []).join(", "), side: side(n), before: n.before_window});
      return link(n.dataset, n.column) + (notes.length ? ` <small>(${esc(notes.join("; "))})</small>` : "");
    }).join(", ")}</p>`;
}
