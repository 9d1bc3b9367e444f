// lineage-listener UI, a column's lineage graph (#/column/DATASET/COLUMN?direction=...).
"use strict";
/** The column page's URL query: ``direction``, ``directOnly``, the window (windowQuery) and ``jobs``. */
function columnQuery(q) {
  const direction = q.get("direction") || "backward";
  // direct edges answer "where does this value come from": the default upstream
  const p = new URLSearchParams({direction, directOnly: q.get("directOnly") ?? (direction === "backward" ? "true" : "false")});
  for (const [k, v] of windowQuery(q)) p.set(k, v);
  if (q.get("jobs") === "1") p.set("jobs", "1");
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
    <div id="window-box"></div><p id="summary"></p>${graphFrame("lineage graph", {jobs: true, legend: legend(p.get("direction"))})}`;
  $("direction").value = p.get("direction");
  $("direction").onchange = () => { $("direct").checked = $("direction").value === "backward"; };
  const submit = () => {
    const w = windowForm();
    if (!w) return;
    const q = new URLSearchParams({direction: $("direction").value, directOnly: String($("direct").checked)});
    for (const [k, v] of w) q.set(k, v);
    if ($("show-jobs").checked) q.set("jobs", "1");
    location.hash = columnHref(ds, col, q);
  };
  $("controls").onsubmit = ev => { ev.preventDefault(); submit(); };
  windowControls(submit);
  const api = apiQuery(withoutJobs(p), LINEAGE_NAMES);
  const url = `/v3/namespaces/default/datasets/${enc(ds)}/columns/${enc(col)}/lineage?${api}`;
  let data, marks;
  try {
    [data] = await Promise.all([getJSON(n, url), loadGraphLibs()]);
    marks = await graphMarks(n, data.nodes.map(x => x.dataset));
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
  const opts = {query: p, api, marks, directOnly: p.get("directOnly") === "true", jobs: p.get("jobs") === "1"};
  const cy = draw(data, opts);
  showSelection(cy, cy.nodes("[start = 1]")[0] || null, opts);  // the page's column in the side panel
}

/** ``p`` without the jobs toggle (a drawing choice, not a question to the API). */
function withoutJobs(p) {
  const out = new URLSearchParams(p);
  out.delete("jobs");
  return out;
}

PAGES.column = (n, parts, q) => column(n, parts[0], parts[1], q.toString());
