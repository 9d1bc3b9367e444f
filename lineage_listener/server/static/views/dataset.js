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

PAGES.dataset = (n, parts) => dataset(n, parts.join("/"));
PAGES.overview = (n, parts) => overview(n, parts.join("/"));
