// lineage-listener UI: hash routes over the read API; the graph is drawn by cytoscape.js + dagre.
"use strict";
const view = document.getElementById("view");
const MAX_NODES = 500;
const BIG_GRAPH = 150;  // nodes: above this the layout ranks by longest path

function esc(s) { return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }
function enc(s) { return encodeURIComponent(s); }
async function getJSON(url) {
  const r = await fetch(url);
  const body = await r.json();
  if (!r.ok) { throw new Error(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)); }
  return body;
}
function datasetLink(d) { return `<a href="#/dataset/${enc(d)}">${esc(d)}</a>`; }

async function home(q) {
  const rows = await getJSON(`/api/datasets?q=${enc(q || "")}`);
  view.innerHTML = `<h2>Datasets${q ? ` matching “${esc(q)}”` : ""}</h2>
    <table id="datasets"><tr><th>dataset</th><th>kind</th><th>format</th><th>columns</th><th>last seen</th></tr>
    ${rows.map(r => `<tr><td>${datasetLink(r.dataset)}</td><td>${esc(r.kind)}</td><td>${esc(r.format)}</td>
      <td>${r.columns}</td><td>${esc(r.last_seen)}</td></tr>`).join("")}</table>`;
}

async function dataset(name) {
  const d = await getJSON(`/api/datasets/${enc(name)}`);
  view.innerHTML = `<h2 class="mono">${esc(d.dataset)}</h2><p>${esc(d.kind)} ${esc(d.format || "")} ${esc(d.location || "")}</p>
    <h3>Columns</h3><table id="columns"><tr><th>column</th><th>type</th></tr>
    ${d.columns.map(c => `<tr><td><a class="column" href="#/column/${enc(d.dataset)}/${enc(c.name)}">${esc(c.name)}</a></td><td>${esc(c.type)}</td></tr>`).join("")}</table>
    <h3>Upstream datasets</h3><ul>${d.upstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Downstream datasets</h3><ul>${d.downstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Recent queries</h3><table><tr><th>when</th><th>role</th><th>app</th><th>action</th><th>status</th><th>run</th></tr>
    ${d.queries.map(q => `<tr><td>${esc(q.captured_at)}</td><td>${q.role}</td><td>${esc(q.app_name)}</td><td>${esc(q.action)}</td>
      <td>${esc(q.status)}</td><td><a href="#/run/${enc(q.run_id)}">${esc(q.run_id)}</a></td></tr>`).join("")}</table>`;
}

function params() {
  const get = id => document.getElementById(id);
  const p = new URLSearchParams({direction: get("direction").value, directOnly: get("direct").checked});
  if (get("depth").value !== "") p.set("maxLevels", get("depth").value);
  if (get("start").value) p.set("start", get("start").value);
  if (get("end").value) p.set("end", get("end").value);
  return p;
}

async function column(ds, col, query) {
  const q = new URLSearchParams(query || "");
  view.innerHTML = `<h2 class="mono">${datasetLink(ds)} <span>[${esc(col)}]</span></h2>
    <div class="controls">
      <label>direction <select id="direction"><option value="backward">backward (sources)</option>
        <option value="forward">forward (impact)</option><option value="both">both</option></select></label>
      <label>depth <input id="depth" type="number" min="0" max="100" style="width:4em" value="${esc(q.get("maxLevels") ?? "")}"></label>
      <label>from <input id="start" type="datetime-local" value="${esc(q.get("start") ?? "")}"></label>
      <label>to <input id="end" type="datetime-local" value="${esc(q.get("end") ?? "")}"></label>
      <label><input id="direct" type="checkbox" ${q.get("directOnly") === "true" ? "checked" : ""}> direct only</label>
      <button id="apply">draw</button>
    </div>
    <div class="legend"><span>── direct</span><span>- - - indirect</span><span style="color:#c0392b">red: masked</span>
      <span>click a column to re-centre</span></div>
    <p id="summary"></p><div id="graph"></div>`;
  document.getElementById("direction").value = q.get("direction") || "backward";
  document.getElementById("apply").onclick = () => {
    location.hash = `#/column/${enc(ds)}/${enc(col)}?${params()}`;
  };
  const data = await getJSON(`/v3/namespaces/default/datasets/${enc(ds)}/columns/${enc(col)}/lineage?${params()}`);
  draw(data);
}

function nodeId(n) { return JSON.stringify([n.dataset, n.column]); }

function draw(data) {
  let nodes = data.nodes;
  const note = nodes.length > MAX_NODES ? ` (showing the ${MAX_NODES} nearest of ${nodes.length}: lower the depth)` : "";
  nodes = [...nodes].sort((a, b) => a.depth - b.depth).slice(0, MAX_NODES);
  const keep = new Set(nodes.map(nodeId));
  const edges = data.edges.filter(e => keep.has(nodeId(e.source)) && keep.has(nodeId(e.target)));
  document.getElementById("summary").innerHTML = `${nodes.length} columns, ${edges.length} edges<span class="note">${esc(note)}</span>`;
  const start = nodeId(data.start || nodes[0] || {});
  const elements = [
    ...nodes.map(n => ({data: {id: nodeId(n), label: `${n.dataset.replace(/^spark_catalog\./, "").split("/").pop()}\n${n.column}`,
                               dataset: n.dataset, column: n.column, start: nodeId(n) === start ? 1 : 0}})),
    ...edges.map((e, i) => ({data: {id: `e${i}`, source: nodeId(e.source), target: nodeId(e.target),
                                    label: e.transform, kind: e.kind, masking: e.masking ? 1 : 0,
                                    expression: e.expression || "", query: e.query_id, at: e.captured_at}})),
  ];
  const cy = cytoscape({
    container: document.getElementById("graph"), elements, wheelSensitivity: 0.3,
    // dagre's default ranker (network simplex) takes ~11 s on 500 nodes / 1,400 edges in
    // headless chromium; longest-path takes ~1 s (bench/server_bench.py), so big graphs use it.
    layout: {name: "dagre", rankDir: "LR", nodeSep: 20, rankSep: 120,
             ranker: nodes.length > BIG_GRAPH ? "longest-path" : "network-simplex"},
    style: [
      {selector: "node", style: {"shape": "round-rectangle", "label": "data(label)", "text-wrap": "wrap",
        "text-valign": "center", "font-size": 10, "width": 150, "height": 38, "background-color": "#dfe9f3",
        "border-width": 1, "border-color": "#5b7a99"}},
      {selector: "node[start = 1]", style: {"background-color": "#f7d774", "border-width": 2}},
      {selector: "edge", style: {"curve-style": "bezier", "target-arrow-shape": "triangle", "label": "data(label)",
        "font-size": 9, "width": 1.5, "line-color": "#555", "target-arrow-color": "#555", "text-background-color": "#fff",
        "text-background-opacity": 1}},
      {selector: "edge[kind = 'indirect']", style: {"line-style": "dashed", "line-color": "#999", "target-arrow-color": "#999"}},
      {selector: "edge[masking = 1]", style: {"line-color": "#c0392b", "target-arrow-color": "#c0392b", "color": "#c0392b"}},
    ],
  });
  window.lineageGraph = cy;  // for tests and the console
  const tip = document.getElementById("tooltip");
  cy.on("mouseover", "edge", ev => {
    const d = ev.target.data();
    tip.textContent = `${d.label} (${d.kind})${d.masking ? " masked" : ""}: ${d.expression}\n${d.query} ${d.at}`;
    tip.hidden = false;
  });
  cy.on("mousemove", ev => { tip.style.left = (ev.originalEvent.clientX + 12) + "px"; tip.style.top = (ev.originalEvent.clientY + 12) + "px"; });
  cy.on("mouseout", "edge", () => { tip.hidden = true; });
  cy.on("tap", "node", ev => {
    if (window.LINEAGE_STATIC) return;  // a shared file has no server to ask
    const d = ev.target.data();
    location.hash = `#/column/${enc(d.dataset)}/${enc(d.column)}?${params()}`;
  });
}

async function runs() {
  const rows = await getJSON("/api/runs");
  view.innerHTML = `<h2>Runs</h2><table><tr><th>run</th><th>app</th><th>Spark</th><th>started</th><th>ended</th><th>queries</th></tr>
    ${rows.map(r => `<tr><td><a href="#/run/${enc(r.run_id)}">${esc(r.run_id)}</a></td><td>${esc(r.app_name)}</td>
      <td>${esc(r.spark_version)}</td><td>${esc(r.started_at)}</td><td>${esc(r.ended_at)}</td><td>${r.queries}</td></tr>`).join("")}</table>`;
}

async function run(id) {
  const r = await getJSON(`/api/runs/${enc(id)}`);
  view.innerHTML = `<h2 class="mono">${esc(r.run_id)}</h2><p>${esc(r.app_name)} · Spark ${esc(r.spark_version)} · ${esc(r.started_at)} – ${esc(r.ended_at || "running")}</p>
    <table id="queries"><tr><th>captured</th><th>action</th><th>status</th><th>target</th><th>edges</th><th>SQL</th></tr>
    ${r.queries.map(q => `<tr><td>${esc(q.captured_at)}</td><td>${esc(q.action)}</td><td>${esc(q.status)}${q.error ? `<br><small>${esc(q.error)}</small>` : ""}</td>
      <td>${q.target_dataset ? datasetLink(q.target_dataset) : "(driver)"}</td><td>${q.edges}</td>
      <td><pre>${esc(q.sql_text || "")}</pre></td></tr>`).join("")}</table>`;
}

async function route() {
  const hash = decodeURIComponent(location.hash.slice(1)) ? location.hash.slice(1) : "/";
  const [path, query] = hash.split("?");
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  try {
    if (parts[0] === "dataset") await dataset(parts.slice(1).join("/"));
    else if (parts[0] === "column") await column(parts[1], parts[2], query);
    else if (parts[0] === "runs") await runs();
    else if (parts[0] === "run") await run(parts.slice(1).join("/"));
    else await home(new URLSearchParams(query || "").get("q"));
  } catch (err) {
    view.innerHTML = `<p class="note">${esc(err.message)}</p>`;
  }
}

function showStatic(data) {
  document.querySelector("header form").hidden = true;
  view.innerHTML = `<h2 class="mono">${esc(data.start.dataset)} [${esc(data.start.column)}]</h2>
    <p>${esc(data.direction)} lineage, written ${esc(data.written_at)} by lineage-listener html</p>
    <div class="legend"><span>── direct</span><span>- - - indirect</span><span style="color:#c0392b">red: masked</span>
      <span>hover an edge for its expression</span></div><p id="summary"></p><div id="graph"></div>`;
  draw(data);
}

if (window.LINEAGE_STATIC) {
  showStatic(window.LINEAGE_STATIC);
} else {
  document.getElementById("search-form").onsubmit = ev => {
    ev.preventDefault();
    location.hash = `#/?q=${enc(document.getElementById("search").value)}`;
  };
  window.addEventListener("hashchange", route);
  route();
}
