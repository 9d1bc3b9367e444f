// lineage-listener UI: "what changed" pages over /api/diff/*. An application's runs, or the runs that wrote a
// dataset, each compared with the run before; only the runs where the lineage changed are listed.
//
// It registers its pages in PAGES (the router calls them with the navigation, the path parts after "changes" and
// the query) and uses core.js's helpers.
"use strict";
(function () {
  const LIMIT = 20;

  function endText(e) {
    if (!e.dataset) return "driver (read)";
    return e.column === null || e.column === undefined ? e.dataset : `${e.dataset} [${e.column}]`;
  }
  function recordText(r) {
    return `${r.transform} ${r.kind}${r.expression ? " " + r.expression : ""}${r.masking ? " [masked]" : ""}`;
  }
  /** Whether a dataset or column of a diff is a source or a target there: where its edges put it. */
  function roles(d) {
    const out = new Map();
    const add = (key, role) => (out.get(key) || out.set(key, new Set()).get(key)).add(role);
    for (const e of [...d.added, ...d.removed, ...d.changed].filter(i => i.item === "edge" || i.target)) {
      if (e.source && e.source.dataset) { add(e.source.dataset, "source"); add(JSON.stringify([e.source.dataset, e.source.column]), "source"); }
      if (e.target && e.target.dataset) { add(e.target.dataset, "target"); add(JSON.stringify([e.target.dataset, e.target.column]), "target"); }
    }
    return out;
  }
  function rows(change, items, role) {
    return items.map(i => {
      if (i.item === "dataset" || i.item === "column") {
        const key = i.item === "dataset" ? i.dataset : JSON.stringify([i.dataset, i.column]);
        const as = role.get(key) || new Set(["target"]);
        const name = i.item === "dataset" ? datasetLink(i.dataset) : `<a class="mono" href="${columnHref(i.dataset, i.column)}">${esc(endText(i))}</a>`;
        const what = [...as].sort().map(r => `${r} ${i.item}`).join(" and ");  // "source dataset", "target column"
        return `<tr class="${change}"><td>${change}</td><td>${what}</td><td>${as.has("target") ? name : ""}</td><td>${as.has("source") && !as.has("target") ? name : ""}</td><td></td></tr>`;
      }
      const what = i.before
        ? `${esc(i.before.map(recordText).join("; "))} <b>→</b> ${esc(i.after.map(recordText).join("; "))}`
        : esc(recordText(i));
      return `<tr class="${change}"><td>${change}${i.fields ? ` <small>(${esc(i.fields.join(", "))})</small>` : ""}</td><td>edge</td>
        <td class="mono">${esc(endText(i.target))}</td><td class="mono">${esc(endText(i.source))}</td><td class="mono">${what}</td></tr>`;
    }).join("");
  }
  /**
   * Labels a change made newly reach a column: an alarm, each with its column's link, where it came from, and the
   * policy rules the column now breaks (``violations``: open violations by column key).
   */
  function newLeaks(d, violations) {
    if (!d.labels.length) return "";
    return `<div class="alarm-box new-leaks" role="alert"><b>${plural(d.labels.length, "label")} newly reaching a column</b><ul>
      ${d.labels.map(l => {
        const broken = (violations[JSON.stringify([l.dataset, l.column])] || []).filter(v => !v.label || v.label === l.label);
        return `<li class="new-leak" data-dataset="${esc(l.dataset)}" data-column="${esc(l.column)}" data-label="${esc(l.label)}">
          <span class="gov-badge gov-carried">${esc(l.label)}</span> now reaches <a class="mono" href="${columnHref(l.dataset, l.column)}">${esc(l.dataset)} [${esc(l.column)}]</a>
          ${l.from ? `<small>(a copy of <a class="mono" href="${columnHref(l.from.dataset, l.from.column)}">${esc(l.from.dataset)} [${esc(l.from.column)}]</a>)</small>` : ""}
          ${broken.length ? `<br><span class="alarm">⚠ breaks ${broken.map(v => esc(v.rule)).join(", ")}</span>: ${esc(broken[0].message)} · <a href="#/violations">violations</a>`
            : `<br><span class="help">no policy rule is broken by it</span>`}</li>`;
      }).join("")}</ul></div>`;
  }
  /** One diff (the /api/diff answer, or one change of a history) as a table of every change, new labels first. */
  function diffTable(d, violations) {
    const role = roles(d);
    return `${newLeaks(d, violations)}<table class="diff"><thead><tr><th>change</th><th>item</th><th>target</th><th>source</th><th>edge</th></tr></thead><tbody>
      ${rows("added", d.added, role)}${rows("removed", d.removed, role)}${rows("changed", d.changed, role)}</tbody></table>`;
  }
  function counts(c) {
    return ["added", "removed", "changed"].map(k => `${c[k]} ${k}`).join(", ");
  }
  function changeList(h, label, violations) {
    if (!h.changes.length) return `<p id="no-changes">No change: every run kept the same lineage.</p>`;
    return `<div id="change-list">${h.changes.map(c => `<section class="change" data-run="${esc(c.run_id)}">
      <h3>${esc(when(c.started_at))} · ${label(c)} <a href="#/run/${enc(c.run_id)}">${esc(c.run_id)}</a>
        <small>against <a href="#/run/${enc(c.previous_run_id)}">${esc(c.previous_run_id)}</a> (${esc(when(c.previous_started_at))})</small></h3>
      <p class="count">${counts(c.counts)} · ${plural(c.runs_kept, "run")} kept this lineage</p>${diffTable(c, violations)}</section>`).join("")}</div>
      ${h.more ? `<p class="pager"><a id="more-changes" href="${location.hash.split("?")[0]}?limit=${h.changes.length + LIMIT}">older changes →</a></p>` : ""}`;
  }
  /** Open violations by column (JSON [dataset, column]); {} without a policy. */
  async function openViolations() {
    try {
      const r = await fetch("/api/violations");
      const v = await r.json();
      const out = {};
      for (const x of v.violations || []) if (!x.resolved_at) (out[JSON.stringify([x.dataset, x.column])] ||= []).push(x);
      return out;
    } catch (err) { return {}; }
  }
  function limitOf(q) { return Math.min(500, Math.max(1, parseInt(q.get("limit") || String(LIMIT), 10) || LIMIT)); }

  async function index(n) {
    setTitle("what changed");
    const apps = await getJSON(n, "/api/diff/apps");
    view.innerHTML = `<h2>What changed</h2>
      <p class="help">An application's runs, or the runs that wrote a dataset, each compared with the run before.</p>
      <form id="changes-dataset-form"><label>dataset <input id="changes-dataset" type="search" placeholder="spark_catalog.db.table or a path" size="50"></label>
        <button type="submit">what changed</button></form>
      <h3>Applications <span class="count">(${apps.length})</span></h3>
      <table id="changes-apps"><thead><tr><th>application</th><th>runs</th><th>first run</th><th>last run</th></tr></thead><tbody>
      ${apps.map(a => `<tr><td><a href="#/changes/app/${enc(a.app_name)}">${esc(a.app_name)}</a></td><td>${a.runs}</td>
        <td>${esc(when(a.first_run_at))}</td><td>${esc(when(a.last_run_at))}</td></tr>`).join("") || emptyRow(4, "no application has captured lineage yet")}</tbody></table>`;
    $("changes-dataset-form").onsubmit = ev => {
      ev.preventDefault();
      location.hash = `#/changes/dataset/${enc($("changes-dataset").value.trim())}`;
    };
  }

  async function appPage(n, name, q) {
    setTitle(name, "what changed");
    const [h, violations] = await Promise.all([getJSON(n, `/api/diff/history?app=${enc(name)}&limit=${limitOf(q)}`), openViolations()]);
    view.innerHTML = `<h2>What changed in <span class="mono">${esc(name)}</span></h2>
      <p id="changes-summary">${plural(h.runs, "run")} with lineage${h.first ? `, from ${esc(when(h.first.started_at))} to ${esc(when(h.last.started_at))}` : ""};
        ${plural(h.changes.length, "change")}${h.more ? " shown" : ""}</p>${changeList(h, () => "run", violations)}`;
  }

  async function datasetPage(n, name, q) {
    setTitle(name, "what changed");
    const [h, violations] = await Promise.all([getJSON(n, `/api/diff/history?dataset=${enc(name)}&limit=${limitOf(q)}`), openViolations()]);
    view.innerHTML = `<h2>What changed in how <span class="mono">${datasetLink(h.dataset)}</span> is written</h2>
      <p id="changes-summary">${plural(h.runs, "run")} wrote it: ${h.writers.map(w => `${esc(w.app_name || "(unnamed)")} (${w.runs})`).join(", ") || "none"};
        ${plural(h.changes.length, "change")}${h.more ? " shown" : ""}</p>${changeList(h, c => esc(c.app_name || ""), violations)}`;
  }

  async function changes(n, parts, q) {
    if (parts[0] === "app" && parts.length > 1) return appPage(n, parts.slice(1).join("/"), q);
    if (parts[0] === "dataset" && parts.length > 1) return datasetPage(n, parts.slice(1).join("/"), q);
    return index(n);
  }
  PAGES.changes = changes;

  // A dataset page links to its "what changed" page, next to its dataset graph link.
  new MutationObserver(() => {
    const link = document.getElementById("overview-link");
    if (!link || document.getElementById("changes-link") || !/^#\/dataset\//.test(document.body.dataset.view || "")) return;
    const name = decodeURIComponent(link.getAttribute("href").replace(/^#\/overview\//, ""));
    link.insertAdjacentHTML("afterend", ` · <a id="changes-link" href="#/changes/dataset/${enc(name)}">what changed</a>`);
  }).observe(document.body, {attributes: true, attributeFilter: ["data-view"]});
})();
