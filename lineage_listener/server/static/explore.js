// lineage-listener UI, exploring a drawn graph: a click picks a column (its paths lit, its details in the side
// panel); the + handles beside a hovered column add one more hop up- or downstream; a click on a dataset box
// opens it to its whole schema (a second click closes it); the jobs toggle draws the application and query
// that wrote each step as a node between the datasets, as Marquez does.
"use strict";

/** What a click, a hover and the jobs toggle do on ``cy`` (draw's ``opts``: the page's URL and API queries). */
function explore(cy, opts) {
  const served = !window.LINEAGE_STATIC;
  cy.on("tap", "node[column]", ev => select(cy, ev.target, opts));
  cy.on("tap", ev => { if (ev.target === cy) { select(cy, null, opts); handles(cy, null); } });
  // hovering a column shows its paths while nothing is picked by a click, and its + handles
  cy.on("mouseover", "node[column]", ev => {
    if (!cy.scratch("picked")) mark(cy, ev.target);
    if (served) handles(cy, ev.target);
  });
  cy.on("mouseout", "node[column]", () => { if (!cy.scratch("picked")) mark(cy, null); });
  cy.on("tap", "node.handle", ev => hop(cy, ev.target.data("of"), ev.target.data("way"), opts));
  cy.on("tap", "node.job", ev => { if (served && ev.target.data("run")) location.hash = `#/run/${enc(ev.target.data("run"))}`; });
  if (served) cy.on("tap", "node.box", ev => toggleDataset(cy, ev.target));
  const jobs = $("show-jobs");
  if (jobs) {
    jobs.checked = !!opts.jobs;
    jobs.onchange = () => { showJobs(cy, jobs.checked); keepInUrl("jobs", jobs.checked ? "1" : null); };
  }
}

/** Highlight ``node``'s paths and show it in the side panel (null clears both), as a click does. */
function select(cy, node, opts) {
  cy.scratch("picked", node || null);
  mark(cy, node);
  showSelection(cy, node, opts);
}

const PANEL_HINT = "Click a column to see its labels, what it is to the start, and to highlight its paths.";

/**
 * The side panel for column ``node``: its names, what it is to the start, its paths on this graph, links, one
 * more hop either way, then the parts other scripts add (GRAPH_HOOKS.panel: labels, violations, why).
 */
function showSelection(cy, node, opts) {
  const panel = $("selection");
  if (!panel) return;
  if (!node) { panel.textContent = PANEL_HINT; return; }
  const d = node.data();
  const notes = reachNotes(d);
  const links = window.LINEAGE_STATIC ? "" :
    `<p class="panel-links"><a id="recentre" href="${columnHref(d.dataset, d.column, opts.query)}">re-centre the graph here</a>
      · <a href="${impactHref(d.dataset, d.column)}">impact</a> · <a href="#/dataset/${enc(d.dataset)}">dataset</a></p>
     <p class="hops"><button id="hop-up" type="button" title="add what it was computed from, one hop">◀ one more hop upstream</button>
       <button id="hop-down" type="button" title="add where it went, one hop">one more hop downstream ▶</button></p>`;
  panel.innerHTML = `<h3 class="mono" id="picked">${esc(d.column)}</h3><p class="mono panel-dataset">${esc(d.dataset)}</p>
    ${d.start ? `<p>the start of this graph</p>` : ""}${notes.length ? `<p id="picked-notes">${esc(notes.join("; "))}</p>` : ""}
    <p id="picked-paths"></p>${links}
    <div id="panel-parts"></div>`;
  panel.dataset.column = d.id;
  // its paths are counted on the whole graph: at once, or when the rest of a large one is drawn (mountGraph)
  cy.scratch("whole").then(() => {
    if (cy.destroyed() || panel.dataset.column !== d.id) return;
    const up = node.predecessors("node[column]").length, down = node.successors("node[column]").length;
    $("picked-paths").textContent = `${plural(up, "column")} upstream, ${plural(down, "column")} downstream on this graph`;
  });
  if (!window.LINEAGE_STATIC) {
    $("hop-up").onclick = () => hop(cy, d.id, "up", opts);
    $("hop-down").onclick = () => hop(cy, d.id, "down", opts);
  }
  const parts = $("panel-parts");
  for (const part of GRAPH_HOOKS.panel) part(parts, d, () => panel.isConnected && panel.dataset.column === d.id);
}

/** The + handles beside ``node``: one more hop upstream (left) and downstream (right); null takes them away. */
function handles(cy, node) {
  const old = cy.nodes(".handle");
  if (node && old.nonempty() && old[0].data("of") === node.id()) return;
  cy.remove(old);
  if (!node || node.removed()) return;
  const p = node.position(), w = node.data("w") / 2 + 12;
  cy.add(["up", "down"].map(way => ({group: "nodes", classes: "handle",
    data: {id: `hop:${way}`, label: "+", of: node.id(), way, w: 18,
           tip: way === "up" ? "one more hop upstream: what it was computed from" : "one more hop downstream: where it went"},
    position: {x: way === "up" ? p.x - w : p.x + w, y: p.y}})));
}

/**
 * One more hop from column ``id`` (``way``: up or down) in the page's window: its lineage one hop that way,
 * merged into the graph. New columns are drawn dashed, with no copy or masking colour (those are the start's);
 * the column stays where it was on screen, unless the view must move (the least) to show what was added.
 */
async function hop(cy, id, way, opts) {
  drawRest(cy);
  const node = cy.getElementById(id), n = nav;
  if (node.empty() || !n) return;
  const {dataset, column} = node.data();
  const q = new URLSearchParams(opts.api || "");
  q.set("direction", way === "up" ? "backward" : "forward");
  q.set("maxLevels", "1");
  let data, marks;
  try {
    data = await getJSON(n, `/v3/namespaces/default/datasets/${enc(dataset)}/columns/${enc(column)}/lineage?${q}`);
    marks = await graphMarks(n, data.nodes.map(x => x.dataset));
  } catch (err) {
    if (!(err instanceof Stale)) say(`one more hop failed: ${err.message}`);
    return;
  }
  if (cy.destroyed()) return;
  const before = node.renderedPosition();
  const added = merge(cy, data, `${column}`, marks);
  handles(cy, null);
  relayout(cy);
  const after = node.renderedPosition();
  cy.panBy({x: before.x - after.x, y: before.y - after.y});
  // then the least move that shows what the hop added beside it
  const near = cy.nodes("[column]").filter(x => data.nodes.some(y => nodeId(y) === x.id()));
  if (near.nonempty()) reveal(cy, near.union(node));
  if (cy.scratch("minimap") || added) minimap(cy);
  say(added ? `${plural(added, "column")} added ${way === "up" ? "upstream" : "downstream"} of ${column}`
            : `nothing more ${way === "up" ? "upstream" : "downstream"} of ${column} in this window`);
  const picked = cy.scratch("picked");
  if (picked) mark(cy, picked);
}

/** A short note under the graph's toolbar (what a hop added, or why nothing). */
function say(text) {
  const out = $("graph-note");
  if (out) out.textContent = text;
}

/** Add ``data``'s columns and edges that the graph lacks; returns how many columns were added. */
function merge(cy, data, from, marks) {
  const g = cy.scratch("graph");
  const datasets = [...new Set([...cy.nodes(".box").map(b => b.data("dataset")), ...data.nodes.map(x => x.dataset)])];
  g.names = shortNames(datasets);
  let added = 0, ord = cy.nodes("[column]").length;
  cy.batch(() => {
    cy.nodes(".box").forEach(b => b.data({label: g.names[b.data("dataset")], title: g.names[b.data("dataset")]}));
    for (const x of data.nodes) {
      const have = cy.getElementById(nodeId(x));
      if (have.nonempty()) { have.removeClass("extra"); continue; }
      if (cy.getElementById("ds:" + x.dataset).empty()) {
        cy.add({group: "nodes", classes: "box", data: {id: "ds:" + x.dataset, label: g.names[x.dataset], title: g.names[x.dataset],
                                                       dataset: x.dataset, w: 10, bw: 10, bh: 10}});
      }
      cy.add({group: "nodes", classes: "explored", data: marked(columnData(x, {explored: from, ord: ord++, w: 48}), marks)});
      added++;
    }
    for (const e of data.edges) {
      const s = nodeId(e.source), t = nodeId(e.target);
      if (cy.edges().some(x => x.data("source") === s && x.data("target") === t)) continue;
      cy.add({group: "edges", data: edgeData(`hop${cy.edges().length}:${s}>${t}`, e, false)});
    }
    Object.assign(g.queries, data.queries || {});
  });
  if (cy.nodes(".job").nonempty()) showJobs(cy, true, false);
  return added;
}

/** The marks (labels, violations) of the columns of ``datasets``, by node id; none without governance.js. */
async function graphMarks(n, datasets) {
  if (!GRAPH_HOOKS.marks || window.LINEAGE_STATIC) return {};
  try { return await GRAPH_HOOKS.marks(n, [...new Set(datasets)]); } catch (err) {
    if (err instanceof Stale) throw err;
    return {};  // the graph is drawn without marks; the side panel says what failed
  }
}

/**
 * A dataset box shows the columns on the path; a tap adds the dataset's other columns (dashed, in schema
 * order, below them, with their labels; the graph makes room) and a second tap takes them away again.
 */
async function toggleDataset(cy, box) {
  drawRest(cy);
  const extra = columnsOf(box).filter(".extra");
  if (extra.nonempty()) {
    cy.remove(extra);
    regrow(cy, box);
    return;
  }
  const dataset = box.data("dataset"), n = nav;
  let schema, marks;
  try {
    [schema, marks] = await Promise.all([getJSON(n, `/api/schema?dataset=${enc(dataset)}`), graphMarks(n, [dataset])]);
  } catch (err) { return; }
  if (cy.destroyed() || box.removed() || columnsOf(box).filter(".extra").nonempty()) return;
  const shown = new Set(columnsOf(box).map(c => c.data("column")));
  const more = (schema.columns || []).filter(c => !shown.has(c.name));
  cy.add(more.map((c, i) => ({group: "nodes", classes: "extra",
    data: marked(columnData({dataset, column: c.name}, {extra: 1, ord: i, w: 48}), marks)})));
  regrow(cy, box);
}

/** The columns drawn in dataset box ``box``. */
function columnsOf(box) {
  return box.cy().nodes("[column]").filter(n => n.data("box") === box.id());
}

/** After ``box`` grew or shrank: the graph laid out again, the box in view, the minimap drawn again (or
 * shown, now that the graph is larger than the frame). */
function regrow(cy, box) {
  relayout(cy);
  reveal(cy, box);
  const bb = renderedExtent(cy);
  if (cy.scratch("minimap") || bb.x1 < 0 || bb.y1 < 0 || bb.x2 > cy.width() || bb.y2 > cy.height()) minimap(cy);
}

/**
 * Draw (``on``) or take away the jobs: each application's writes into one dataset become one node between the
 * datasets it read and the one it wrote, linking to its latest run (the payload's ``queries``); each step's
 * edge is then drawn as source -> job -> target. ``fit``: open a readable view of the new graph.
 */
function showJobs(cy, on, fit = true) {
  drawRest(cy);
  const g = cy.scratch("graph");
  cy.batch(() => {
    cy.remove(cy.nodes(".job"));
    cy.edges(".via-job").removeClass("hidden via-job");
    if (!on) return;
    const jobs = new Map(), links = new Map();
    const link = (source, target, e, words) => {
      const key = `${source}>${target}`;
      const l = links.get(key) || links.set(key, {source, target, kinds: new Set(), masks: [], alarm: 0, words: new Set(), before: [], history: []}).get(key);
      l.kinds.add(e.data("kind")); l.masks.push(e.data("masking")); l.alarm ||= e.data("alarm"); l.before.push(e.data("before"));
      l.history.push(e.data("history"));
      if (words) l.words.add(words);
    };
    cy.edges().not(".handle").forEach(e => {
      const q = g.queries[e.data("query")] || {};
      const target = e.target().data("dataset"), app = q.app_name || "an unknown application";
      const id = JOB + JSON.stringify([app, target]);
      const job = jobs.get(id) || jobs.set(id, {id, app, target, actions: new Set(), run: "", at: ""}).get(id);
      if (q.action) job.actions.add(q.action);
      const at = q.captured_at || e.data("at") || "";
      if (at >= job.at) { job.at = at; job.run = q.run_id || e.data("run") || job.run; }
      e.addClass("hidden via-job");
      link(e.source().id(), id, e, "");
      link(id, e.target().id(), e, e.data("label"));
    });
    cy.add([...jobs.values()].map((j, i) => ({group: "nodes", classes: "job", data: {id: j.id, label: `⚙ ${j.app}`, job: 1,
      run: j.run, w: 48, ord: i, tip: `job: ${j.app}${j.actions.size ? ` (${[...j.actions].join(", ")})` : ""}\nwrote ${j.target}`
        + `${j.run ? `\nlatest run ${j.run}${j.at ? " at " + when(j.at) : ""}` : ""}${window.LINEAGE_STATIC || !j.run ? "" : "\nclick for the run"}`}})));
    cy.add([...links.values()].map((l, i) => ({group: "edges", classes: "job-edge", data: {
      id: `job-edge${i}`, source: l.source, target: l.target, label: [...l.words].sort().join(", "),
      kind: l.kinds.has("direct") ? "direct" : "indirect", masking: l.masks.every(Boolean) ? 1 : 0, alarm: l.alarm ? 1 : 0,
      before: l.before.every(Boolean) ? 1 : 0, history: l.history.every(Boolean) ? 1 : 0, show: 0, mx: 0, my: 0, cpd: [], cpw: [], way: "fwd"}})));
  });
  relayout(cy);
  if (fit) {
    const focus = cy.nodes("[start = 1]");
    if (!readableView(cy, focus) || cy.scratch("minimap")) minimap(cy);
  }
}
