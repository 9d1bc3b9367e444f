// lineage-listener UI, runs and streams: the runs list (#/runs), one run with its queries (#/run/ID), the
// streams (#/streams).
"use strict";
async function runs(n, offset, size) {
  setTitle("runs");
  const r = await getJSON(n, `/api/browse/runs?offset=${offset}&limit=${size}`);
  const href = o => `#/runs?offset=${o}${size !== PAGE ? `&limit=${size}` : ""}`;
  view.innerHTML = `<h2>Runs</h2><p class="count" id="runs-count">${plural(r.total, "run")}</p>
    <table id="runs"><thead><tr><th>run</th><th>app</th><th>Spark</th><th>started</th><th>duration</th><th>queries</th><th>failed</th><th>status</th></tr></thead><tbody>
    ${r.rows.map(x => `<tr class="${x.failed ? "failed" : ""}"><td><a href="#/run/${enc(x.run_id)}">${esc(x.run_id)}</a></td><td>${esc(x.app_name)}</td>
      <td>${esc(x.spark_version)}</td><td>${esc(when(x.started_at))}</td><td>${x.ended_at ? duration(x.duration_ms) : "running"}</td>
      <td>${x.queries}</td><td>${x.failed || ""}</td><td>${esc(x.status)}</td></tr>`).join("") || emptyRow(8, "no run captured yet")}</tbody></table>
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
      <td>${(x.plans || []).length}</td><td><a href="#/run/${enc(x.run_id)}">${esc(x.run_id)}</a></td></tr>`).join("") || emptyRow(9, "no stream captured yet")}</tbody></table>`;
}

async function run(n, id) {
  setTitle(id, "run");
  const r = await getJSON(n, `/api/runs/${enc(id)}`);
  setTitle(`${r.app_name || ""} ${r.run_id}`, "run");
  const failed = r.queries.filter(q => q.status !== "succeeded").length;
  view.innerHTML = `<h2 class="mono">${esc(r.app_name || "")} <small>${esc(r.run_id)}</small></h2>
    <p>Spark ${esc(r.spark_version)} · ${esc(r.master || "")} · ${esc(when(r.started_at))} – ${r.ended_at ? esc(when(r.ended_at)) : "running"}
     · ${plural(r.queries.length, "query")}${failed ? ` · <span class="alarm">${failed} failed</span>` : ""}</p>
    ${runFamily(r)}
    <table id="queries"><thead><tr><th>captured</th><th>action</th><th>status</th><th>duration</th><th>target</th><th>wrote</th><th>read</th><th>edges</th><th>SQL</th></tr></thead><tbody>
    ${r.queries.map(q => `<tr class="${q.status === "succeeded" ? "" : "failed"}"><td>${esc(when(q.captured_at))}</td><td>${esc(q.action)}<br><small>${esc(q.command || "")}</small></td>
      <td class="status">${esc(q.status)}${q.error ? `<br><small>${esc(q.error)}</small>` : ""}</td><td>${duration(q.duration_ms)}</td>
      <td>${q.target_dataset ? datasetLink(q.target_dataset) : "(driver)"}</td><td class="wrote">${writtenCounts(q)}</td>
      <td class="read">${(q.reads || []).map(x => `${esc(countOf(x.rows, "row"))} <small>${esc(x.dataset)}</small>`).join("<br>")}</td><td>${q.edges}</td>
      <td>${q.sql_text ? `<pre>${esc(q.sql_text)}</pre>` : `<span class="none">not from SQL</span>`}</td></tr>`).join("") || emptyRow(9, "no query captured in this run")}</tbody></table>`;
}

/** What a write produced: rows (0 is flagged), bytes, files; empty when Spark measured nothing. */
function writtenCounts(q) {
  if (q.rows === null || q.rows === undefined) return "";
  const rows = q.rows === 0 ? `<span class="alarm">0 rows</span>` : esc(countOf(q.rows, "row"));
  return `${rows}${q.bytes !== null && q.bytes !== undefined ? `<br><small>${esc(countOf(q.bytes, "byte"))}` +
    `${q.files !== null && q.files !== undefined ? `, ${esc(countOf(q.files, "file"))}` : ""}</small>` : ""}`;
}
function countOf(n, word) { return n === null || n === undefined ? "" : plural(n, word); }

/** The scheduler's runs above this one (its task and DAG run) and the runs launched under it. */
function runFamily(r) {
  const link = (runId, text) => runId ? `<a href="#/run/${enc(runId)}">${esc(text)}</a>` : esc(text);
  const parts = [];
  if (r.parent) parts.push(`launched by ${link(r.parent.run_id, `${r.parent.namespace || ""}/${r.parent.name || ""}`)}
    <small class="mono">${esc(r.parent.openlineage_run_id)}</small>`);
  if (r.root) parts.push(`root ${link(r.root.run_id, `${r.root.namespace || ""}/${r.root.name || ""}`)}
    <small class="mono">${esc(r.root.openlineage_run_id)}</small>`);
  const kids = (r.children || []).map(c => `<li>${link(c.run_id, `${c.app_name || ""} ${c.run_id}`)}${c.task ? ` <small>${esc(c.task)}</small>` : ""}</li>`);
  return (parts.length ? `<p id="run-family">${parts.join(" · ")}</p>` : "") +
    (kids.length ? `<h3>Runs launched under it</h3><ul id="run-children">${kids.join("")}</ul>` : "");
}

PAGES.runs = (n, parts, q) => runs(n, offsetOf(q), sizeOf(q));
PAGES.run = (n, parts) => run(n, parts.join("/"));
PAGES.streams = n => streams(n);
