// lineage-listener UI, a column's impact (#/impact/DATASET/COLUMN): its copies by masking, the columns it only
// influenced, who read it, and the forward graph.
"use strict";
/** A column's link (its backward graph) and dataset, as the impact tables show them. */
function impactCells(d) {
  return `<td>${d.hop}</td><td>${datasetLink(d.dataset)}</td>
      <td><a href="${columnHref(d.dataset, d.column, "direction=backward&directOnly=true")}">${esc(d.column)}</a></td>`;
}
/** The steps that wrote an impact row's column (``from``; of one ``kind`` only, when given), its applications and runs. */
function writerCells(d, kind) {
  return `<td>${d.from.filter(f => !kind || f.kind === kind).map(f => `<span title="${esc(f.dataset)}">${esc(f.column)}</span> <small>(${esc(f.transform)}${f.masking ? ", masked" : ""}${f.guess ? ", guess" : ""}${f.kind === "indirect" ? ", indirect" : ""}${f.before_window ? ", before the window" : ""})</small>`).join("<br>")}</td>
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
  const submit = () => {
    const w = windowForm();
    if (w) location.hash = impactHref(ds, col, w);
  };
  $("controls").onsubmit = ev => { ev.preventDefault(); submit(); };
  windowControls(submit);
  // the graph is the forward lineage in the same window and depth: the report's columns and the hops before the window
  const graphQuery = apiQuery(new URLSearchParams([["direction", "forward"], ["directOnly", "false"], ...p]), LINEAGE_NAMES);
  let r, data, marks;
  try {
    [r, data] = await Promise.all([getJSON(n, `/api/impact?dataset=${enc(ds)}&column=${enc(col)}&${api}`),
      getJSON(n, `/v3/namespaces/default/datasets/${enc(ds)}/columns/${enc(col)}/lineage?${graphQuery}`), loadGraphLibs()]);
    marks = await graphMarks(n, data.nodes.map(x => x.dataset));
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
      <span class="${unmasked.length ? "alarm" : ""}" id="n-unmasked">${unmasked.length} unmasked</span>,
      <span class="${partly.length ? "partly" : ""}" id="n-partly">${partly.length} partly masked</span>,
      <span class="${masked.length ? "masked" : ""}" id="n-masked">${masked.length} masked on every path</span>;
      <span id="n-influenced">${plural(r.influenced.length, "column")} influenced only</span>;
      written by ${plural(apps.size, "application")}; ${plural(r.reads.length, "query")} read it
      · window ${since ? esc(when(since)) : "any time"} – ${until ? esc(when(until)) : "now"}</p>
    ${windowNote(r)}
    ${unmasked.length ? `<div class="alarm-box" id="alarm" role="alert"><b>${plural(unmasked.length, "unmasked copy")}</b>: these columns hold its values in clear
      <ul id="alarm-list">${unmasked.map(leak).join("")}</ul></div>` : ""}
    <h3>Copies <span class="count">(${r.downstream.length}: unmasked first, then partly masked, then masked)</span></h3>
    <table id="impact-table"><thead><tr><th>hop</th><th>dataset</th><th>column</th><th>status</th><th>copied from</th><th>applications</th><th>runs</th></tr></thead>
    <tbody>${[...unmasked, ...partly, ...masked].map(copyRow).join("") || emptyRow(7, "no column holds a copy of it")}</tbody></table>
    <h3>Influenced by it, not copies <span class="count">(${r.influenced.length})</span></h3>
    <p class="help">It decided which rows, groups or branches these columns hold (a filter, a join or group key); they hold none of its values.</p>
    <table id="influenced-table"><thead><tr><th>hop</th><th>dataset</th><th>column</th><th>via</th><th>from</th><th>applications</th><th>runs</th></tr></thead>
    <tbody>${r.influenced.map(influencedRow).join("") || emptyRow(7, "no column is only influenced by it")}</tbody></table>
    <h3>Reads <span class="count">(${r.reads.length})</span></h3>
    <table id="reads"><thead><tr><th>when</th><th>application</th><th>action</th><th>status</th><th>into</th><th>transforms</th></tr></thead><tbody>
    ${r.reads.map(x => `<tr><td>${esc(when(x.captured_at))}</td><td>${esc(x.app_name)}</td><td>${esc(x.action)}</td><td>${esc(x.status)}</td>
      <td>${x.target_dataset ? datasetLink(x.target_dataset) : "(driver)"}</td><td>${esc((x.transforms || []).join(", "))}</td></tr>`).join("")
      || emptyRow(6, "no query read it")}</tbody></table>
    <h3>Graph</h3><p id="summary"></p>${graphFrame("forward lineage graph", {jobs: true, legend: legend("forward")})}`;
  const opts = {query: forward, api: graphQuery, marks};
  const cy = draw(data, opts);
  showSelection(cy, cy.nodes("[start = 1]")[0] || null, opts);
}

PAGES.impact = (n, parts, q) => impact(n, parts[0], parts[1], q.toString());
