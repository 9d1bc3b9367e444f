// lineage-listener UI, a dataset: its page (#/dataset/NAME) and the dataset graph around it (#/overview/NAME).
"use strict";
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
      <td><a href="${impactHref(d.dataset, c.name)}">impact</a></td></tr>`).join("") || emptyRow(5, "no column recorded")}</tbody></table>
    <h3>Upstream datasets</h3><ul>${d.upstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Downstream datasets</h3><ul>${d.downstream.map(u => `<li>${datasetLink(u)}</li>`).join("") || "<li>none</li>"}</ul>
    <h3>Recent queries <span class="count">(latest ${d.queries.length})</span></h3>
    <table id="dataset-queries"><thead><tr><th>when</th><th>role</th><th>rows</th><th>app</th><th>action</th><th>status</th><th>run</th></tr></thead><tbody>
    ${d.queries.map(q => `<tr class="${q.status === "succeeded" ? "" : "failed"}"><td>${esc(when(q.captured_at))}</td><td>${q.role}</td>
      <td class="rows">${q.rows === null || q.rows === undefined ? "" : q.rows === 0 && q.role === "wrote" ? `<span class="alarm">0</span>` : esc(thousands(q.rows))}</td><td>${esc(q.app_name)}</td><td>${esc(q.action)}</td>
      <td>${esc(q.status)}</td><td><a href="#/run/${enc(q.run_id)}">${esc(q.run_id)}</a></td></tr>`).join("") || emptyRow(7, "no query wrote or read it")}</tbody></table>`;
  $("column-filter").oninput = ev => {
    const f = ev.target.value.toLowerCase();
    for (const tr of document.querySelectorAll("#columns tbody tr")) tr.hidden = !tr.dataset.name.includes(f);
  };
}


/**
 * The dataset graph: the datasets upstream and downstream of ``ds``, each marked with the labels its columns
 * carry and the policy rules they break; a click shows a dataset's details in the side panel.
 */
async function overview(n, ds) {
  setTitle("dataset graph", ds);
  const r = await getJSON(n, `/api/overview?dataset=${enc(ds)}`);
  const [, marks] = await Promise.all([loadGraphLibs(), graphMarks(n, r.nodes.map(x => x.dataset))]);
  if (!n.live()) throw new Stale();
  const carried = datasetMarks(marks);
  const marked = r.nodes.filter(x => carried[x.dataset]);
  view.innerHTML = `<h2 class="mono">Datasets around ${datasetLink(r.dataset)}</h2>
    <p id="summary">${plural(r.nodes.length, "dataset")}, ${plural(r.edges.length, "link")} (${plural(r.depth, "hop")} each way)
      · <span id="labelled-count">${plural(marked.filter(x => carried[x.dataset].labels.length).length, "dataset")} with labelled columns</span>
      · <span id="violating-count" class="${marked.some(x => carried[x.dataset].violations) ? "alarm" : ""}">${plural(marked.filter(x => carried[x.dataset].violations).length, "dataset")} breaking a policy rule</span></p>
    ${graphFrame("dataset graph", {table: false, hint: "click a dataset for its details", legend: `<section class="legend" id="legend"><h4>Legend</h4>
      <span><span class="lg-labelled">purple halo</span> [pii.email]: its columns carry these labels</span>
      <span><span class="lg-violation">⚠ red dashed halo</span>: a column breaks a policy rule</span><span>click a dataset for its details</span></section>`})}
    <table id="overview-table"><thead><tr><th>from</th><th>to</th><th>column edges</th><th>queries</th></tr></thead><tbody>
    ${r.edges.map(e => `<tr><td>${datasetLink(e.source)}</td><td>${datasetLink(e.target)}</td><td>${e.columns}</td><td>${e.queries}</td></tr>`).join("")
      || emptyRow(4, "no dataset is linked to it")}</tbody></table>`;
  const names = shortNames(r.nodes.map(x => x.dataset));
  const node = x => {
    const m = carried[x.dataset] || {labels: [], violations: 0};
    const d = {id: x.dataset, name: names[x.dataset], dataset: x.dataset, start: x.dataset === r.dataset ? 1 : 0, w: 60, ord: 0,
               violations: m.violations};
    if (m.labels.length) d.labels = m.labels.join(",");
    d.label = nodeText(d, true);
    return {data: d, classes: "dataset"};
  };
  const cy = mountGraph([
    ...r.nodes.map(node),
    ...r.edges.map((e, i) => ({data: {id: `e${i}`, source: e.source, target: e.target, label: plural(e.columns, "column"),
                                      show: 0, mx: 0, my: 0, cpd: [], cpw: [], way: "fwd",
                                      tip: `${e.source}\n→ ${e.target}\n${plural(e.columns, "column edge")}, ${plural(e.queries, "query")}`}}))],
    r.dataset, r.nodes.length, {rankGap: 70, node: 38});  // one label a link ("7 columns"): narrower gaps than a column graph's
  cy.on("tap", "node", ev => showDataset(ev.target, carried[ev.target.id()]));
  cy.on("tap", ev => { if (ev.target === cy) mark(cy, null); });
}

/** Per dataset, the labels its columns carry and how many of its columns break a rule (from GRAPH_HOOKS.marks). */
function datasetMarks(marks) {
  const out = {};
  for (const [key, m] of Object.entries(marks)) {
    const [dataset] = JSON.parse(key), d = out[dataset] ||= {labels: [], violations: 0, columns: []};
    for (const l of m.labels) if (!d.labels.includes(l)) d.labels.push(l);
    if (m.violations.length) { d.violations++; d.columns.push([JSON.parse(key)[1], m.violations]); }
  }
  for (const d of Object.values(out)) d.labels.sort();
  return out;
}

/** The side panel for a dataset of the dataset graph: its marks and where to go from it. */
function showDataset(node, m) {
  const cy = node.cy(), d = node.data(), panel = $("selection");
  mark(cy, node);
  panel.innerHTML = `<h3 class="mono" id="picked">${esc(d.name)}</h3><p class="mono panel-dataset">${esc(d.dataset)}</p>
    <p>${plural(node.predecessors("node").length, "dataset")} upstream, ${plural(node.successors("node").length, "dataset")} downstream on this graph</p>
    ${m && m.labels.length ? `<p>its columns carry ${m.labels.map(l => `<span class="gov-badge gov-carried">${esc(l)}</span>`).join(" ")}</p>` : ""}
    ${m && m.violations ? `<div class="alarm-box"><b>${plural(m.violations, "column")} breaking a policy rule</b><ul>${m.columns.map(([c, v]) =>
      `<li><a href="${columnHref(d.dataset, c)}">${esc(c)}</a>: ${v.map(x => esc(x.rule)).join(", ")}</li>`).join("")}</ul></div>` : ""}
    <p class="panel-links"><a id="open-dataset" href="#/dataset/${enc(d.dataset)}">dataset page</a>
      · <a href="#/overview/${enc(d.dataset)}">the graph around it</a> · <a href="#/changes/dataset/${enc(d.dataset)}">what changed</a></p>`;
}

PAGES.dataset = (n, parts) => dataset(n, parts.join("/"));
PAGES.overview = (n, parts) => overview(n, parts.join("/"));
