// lineage-listener UI, governance: labels on columns and datasets (marks on the graphs drawn before they are
// drawn, badges in the tables), a column's labels, violations and "why is this PII?" in the graph's side
// panel with a form to set or review a label, and the Violations page (#/violations).
"use strict";

const GOV = {
  token: () => sessionStorage.getItem("lineage-token") || "",
  /** GET JSON without a Nav (decorations may come late: callers check the page is still the same). */
  async get(url) {
    const r = await fetch(url);
    const body = await r.json();
    if (!r.ok) throw new Error(typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail));
    return body;
  },
  key: (ds, col) => JSON.stringify([ds, col]),
  /** The labels a column carries, with how: declared, a copy; and the masked and influenced ones. */
  summary(row) {
    const carried = row.labels.filter(x => x.value).map(x => x.label);
    const reviewed = row.labels.filter(x => !x.value).map(x => x.label);
    return {carried, reviewed, masked: (row.masked || []).map(x => x.label),
            influenced: (row.influenced_by || []).map(x => x.label)};
  },
  badges(row, violations) {
    const s = GOV.summary(row);
    return [
      ...s.carried.map(l => `<span class="gov-badge gov-carried" title="carries ${esc(l)}">${esc(l)}</span>`),
      ...s.reviewed.map(l => `<span class="gov-badge gov-reviewed" title="reviewed: not ${esc(l)}">not ${esc(l)}</span>`),
      ...s.masked.filter(l => !s.carried.includes(l)).map(l => `<span class="gov-badge gov-masked" title="a masked copy of ${esc(l)}">${esc(l)} masked</span>`),
      ...(violations ? [`<span class="gov-badge gov-violation" title="${esc(violations.map(v => `${v.rule}: ${v.message}`).join("; "))}">⚠ ${plural(violations.length, "violation")}</span>`] : []),
    ].join(" ");
  },
  /** The open violations by column key (GOV.key); {} without a policy or when it cannot be read. */
  async violationsByColumn() {
    try {
      const v = await GOV.get("/api/violations");
      const out = {};
      for (const x of v.violations) if (!x.resolved_at) (out[GOV.key(x.dataset, x.column)] ||= []).push(x);
      return out;
    } catch (err) { return {}; }
  },
  /** The labels of the columns of ``datasets`` (at most 100 a request), by column key. */
  async labelRows(datasets) {
    const rows = {};
    for (let i = 0; i < datasets.length; i += 100) {
      const part = datasets.slice(i, i + 100);
      const answer = await GOV.get(`/api/labels?influence=false&${part.map(d => "datasets=" + enc(d)).join("&")}`);
      for (const r of answer.columns) rows[GOV.key(r.dataset, r.column)] = r;
    }
    return rows;
  },
};

/** GRAPH_HOOKS.marks: the labels each column of ``datasets`` carries and the rules it breaks, by node id. */
GRAPH_HOOKS.marks = async function marks(n, datasets) {
  const [rows, violations] = await Promise.all([GOV.labelRows(datasets), GOV.violationsByColumn()]);
  if (!n.live()) throw new Stale();
  const out = {};
  for (const [key, row] of Object.entries(rows)) out[key] = {labels: GOV.summary(row).carried, violations: []};
  for (const [key, v] of Object.entries(violations)) (out[key] ||= {labels: [], violations: []}).violations = v;
  return out;
};

function govPath(item) {
  return item.hops.map(h => `<li><span class="mono">${esc(h.source[0])} [${esc(h.source[1])}]</span> → <span class="mono">${esc(h.target[0])} [${esc(h.target[1])}]</span>
    <b>${esc(h.transform)}</b>${h.masking ? ' <span class="masked">(masking)</span>' : ""}
    <span class="gov-hop">by ${esc(h.application || h.run_id || "?")}, query ${esc(h.query_id || "?")}, captured ${esc(when(h.captured_at))}</span></li>`).join("");
}

/** A violation as the side panel lists it: the rule, what it says, the path that breaks it. */
function govViolation(x) {
  const path = x.path.map(([d, c, t]) => `${esc(d)} [${esc(c ?? "*")}]${t ? ` <i>(${esc(t)})</i>` : ""}`).join(" → ");
  return `<li class="gov-violation-item" data-rule="${esc(x.rule)}"><span class="gov-badge gov-violation">⚠ ${esc(x.rule)}</span>
    ${esc(x.message)}<div class="gov-path">${path}</div></li>`;
}

/**
 * GRAPH_HOOKS.panel: a column's labels (what it carries and why, masked copies, influence), the rules it
 * breaks, and a form to set a label or review one (a review, "does NOT carry it", stops it here).
 */
async function govPanel(parts, d, current) {
  parts.insertAdjacentHTML("beforeend", `<section id="labels-panel" class="gov-panel"><h4>Labels</h4><p>…</p></section>`);
  const box = $("labels-panel");
  let row, violations;
  try {
    [row, violations] = await Promise.all([
      GOV.get(`/api/labels?dataset=${enc(d.dataset)}&column=${enc(d.column)}`).then(a => a.columns[0]), GOV.violationsByColumn()]);
  } catch (err) {
    if (current()) box.innerHTML = `<h4>Labels</h4><div class="error">${esc(err.message)}</div>`;
    return;
  }
  if (!current()) return;
  const mine = violations[GOV.key(row.dataset, row.column)] || [];
  const items = [
    ...row.labels.map(x => x.source === "propagated"
      ? `<li class="gov-why"><details><summary><span class="gov-badge gov-carried">${esc(x.label)}</span> a copy of
          <span class="mono">${esc(x.from[0])} [${esc(x.from[1])}]</span>: why is this ${esc(x.label)}?</summary><ol class="gov-path">${govPath(x)}</ol></details></li>`
      : `<li><span class="gov-badge ${x.value ? "gov-carried" : "gov-reviewed"}">${x.value ? "" : "not "}${esc(x.label)}</span>
          declared (${esc(x.source)}${x.set_by ? ", by " + esc(x.set_by) : ""}${x.set_at ? ", " + esc(when(x.set_at)) : ""}${x.origin ? ", " + esc(x.origin) : ""})</li>`),
    ...(row.masked || []).map(x => `<li class="gov-why"><details><summary><span class="gov-badge gov-masked">${esc(x.label)} masked</span>
          a masked copy of <span class="mono">${esc(x.from[0])} [${esc(x.from[1])}]</span>: the label stops here</summary><ol class="gov-path">${govPath(x)}</ol></details></li>`),
    ...(row.influenced_by || []).map(x => `<li class="gov-why"><details><summary>influenced by ${esc(x.label)} of
          <span class="mono">${esc(x.from[0])} [${esc(x.from[1])}]</span> via ${esc(x.via.join(", "))} (not a copy)</summary><ol class="gov-path">${govPath(x)}</ol></details></li>`),
  ];
  box.innerHTML = `${mine.length ? `<div class="alarm-box" id="column-violations" role="alert"><b>Breaks ${plural(mine.length, "policy rule")}</b>
      <ul id="violations-list">${mine.map(govViolation).join("")}</ul><a href="#/violations">all violations</a></div>` : ""}
    <h4>Labels</h4><ul id="labels-list">${items.join("") || "<li>no label reaches this column</li>"}</ul>
    <form id="label-form" class="label-form"><label>label <input id="label-name" size="14" placeholder="pii.email"></label>
      <label title="a review: this column does not carry the label (stops it here)"><input id="label-not" type="checkbox"> does NOT carry it</label>
      <label>token <input id="label-token" type="password" size="12" value="${esc(GOV.token())}"></label>
      <button id="label-set" type="submit">set</button><button id="label-unset" type="button">remove</button>
      <span id="label-status" role="status"></span></form>`;
  const send = async method => {
    const token = $("label-token").value.trim();
    sessionStorage.setItem("lineage-token", token);
    const r = await fetch("/api/labels", {method, headers: {"Content-Type": "application/json", Authorization: `Bearer ${token}`},
      body: JSON.stringify({dataset: row.dataset, column: row.column, label: $("label-name").value.trim(),
                            value: method === "POST" ? !$("label-not").checked : null})});
    const body = await r.json().catch(() => ({}));
    if (!r.ok) { $("label-status").textContent = `${r.status}: ${typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail)}`; return; }
    route();
  };
  $("label-form").onsubmit = ev => { ev.preventDefault(); send("POST"); };
  $("label-unset").onclick = () => send("DELETE");
  box.dataset.ready = d.id;  // tests wait for this
}
GRAPH_HOOKS.panel.push(govPanel);

/** Badges beside each column of a dataset page. */
async function govDatasetBadges(hash, ds) {
  const [labels, violations] = await Promise.all([GOV.get(`/api/labels?dataset=${enc(ds)}`), GOV.violationsByColumn()]);
  if (location.hash !== hash) return;
  const rows = {};
  for (const r of labels.columns) rows[r.column] = r;
  for (const a of document.querySelectorAll("#columns a.column")) {
    const col = decodeURIComponent(a.getAttribute("href").split("/").pop().split("?")[0]);
    const row = rows[col] || {labels: [], masked: [], influenced_by: []};
    const v = violations[GOV.key(labels.columns[0] ? labels.columns[0].dataset : ds, col)];
    const html = GOV.badges(row, v);
    if (html) a.insertAdjacentHTML("afterend", ` <span class="gov-badges" data-column="${esc(col)}">${html}</span>`);
  }
}

/** Badges beside the column links of a page's tables (the impact tables, search results, the graph as a table). */
async function govTableLabels(hash) {
  const links = [...document.querySelectorAll("#view table:not(#columns) a[href^='#/column/']")]
    .filter(a => !a.nextElementSibling || !a.nextElementSibling.classList.contains("gov-badges"));
  const at = a => a.getAttribute("href").slice("#/column/".length).split("?")[0].split("/").map(decodeURIComponent);
  const datasets = [...new Set(links.map(a => at(a)[0]))].slice(0, 100);
  if (!datasets.length) return;
  const [rows, violations] = await Promise.all([GOV.labelRows(datasets), GOV.violationsByColumn()]);
  if (location.hash !== hash || !Object.keys(rows).length) return;
  for (const a of links) {
    const [ds, col] = at(a);
    const row = rows[GOV.key(ds, col)];
    const html = row ? GOV.badges(row, violations[GOV.key(ds, col)]) : "";
    if (html && a.isConnected) a.insertAdjacentHTML("afterend", ` <span class="gov-badges" data-dataset="${esc(ds)}" data-column="${esc(col)}">${html}</span>`);
  }
}

/** #/violations: what the policy watch found, the rules, and the webhook's state. */
PAGES.violations = async function violations(n, parts, q) {
  setTitle("violations");
  const all = q.get("resolved") === "true";
  const v = await getJSON(n, `/api/violations${all ? "?resolved=true" : ""}`);
  if (!v.policy) {
    view.innerHTML = `<h2>Violations</h2><p>No policy is checked: start the server with <code>serve --policy FILE</code>.</p>`;
    return;
  }
  const counts = {};
  for (const x of v.violations) if (!x.resolved_at) counts[x.rule] = (counts[x.rule] || 0) + 1;
  const hook = v.webhook;
  const pathText = p => p.map(([d, c, t]) => `${esc(d)} [${esc(c ?? "*")}]${t ? ` <i>(${esc(t)})</i>` : ""}`).join(" → ");
  view.innerHTML = `<h2>Violations <span class="count">(${v.violations.filter(x => !x.resolved_at).length} open)</span></h2>
    <p>Policy <code>${esc(v.policy.origin)}</code>, checked on every batch written${v.watch && v.watch.last_check_at ? ` · last check ${esc(when(v.watch.last_check_at))} (${esc(v.watch.last_check_ms)} ms)` : ""}${v.watch && v.watch.errors ? ` · <span class="alarm">${v.watch.errors} failed checks: ${esc(v.watch.last_error)}</span>` : ""}
      · <a href="#/violations${all ? "" : "?resolved=true"}">${all ? "open only" : "with resolved ones"}</a></p>
    <div id="webhook" class="${hook && (hook.given_up || hook.pending) ? "alarm-box" : ""}">${hook
      ? `Webhook <code>${esc(hook.url)}</code>: ${hook.sent} sent, <span id="webhook-pending">${hook.pending}</span> waiting, ${hook.retries} retries, <span id="webhook-given-up">${hook.given_up}</span> given up${hook.last_error ? ` · last error ${esc(hook.last_error)} (${esc(when(hook.last_error_at))})` : ""}`
      : "No webhook (serve --webhook URL)."}</div>
    <h3>Rules</h3><ul id="rules">${v.policy.rules.map(r => `<li><b>${esc(r.name)}</b> ${esc(r.kind)}${r.label ? " " + esc(r.label) : ""}
      ${r.datasets.length ? "in " + r.datasets.map(d => `<code>${esc(d)}</code>`).join(", ") : ""}: <span class="${counts[r.name] ? "alarm" : "masked"}">${counts[r.name] || 0} open</span></li>`).join("")}</ul>
    <table id="violations"><thead><tr><th>found</th><th>rule</th><th>label</th><th>column</th><th>path</th><th>applications</th><th>last seen</th><th>webhook</th></tr></thead><tbody>
    ${v.violations.map(x => `<tr class="${x.resolved_at ? "" : "st-unmasked"}" data-rule="${esc(x.rule)}"><td>${esc(when(x.found_at))}${x.resolved_at ? `<br><small>resolved ${esc(when(x.resolved_at))}</small>` : ""}</td>
      <td>${esc(x.rule)}<br><small>${esc(x.kind)}</small></td><td>${esc(x.label || "")}</td>
      <td>${x.column ? `<a href="${columnHref(x.dataset, x.column)}">${esc(x.dataset)} [${esc(x.column)}]</a>` : datasetLink(x.dataset)}</td>
      <td class="gov-pathcell">${pathText(x.path)}<br><small>${esc(x.message)}</small></td><td>${esc((x.applications || []).join(", "))}</td>
      <td>${esc(when(x.last_seen))}</td><td>${x.notified_at ? "sent " + esc(when(x.notified_at)) : x.gave_up_at ? `<span class="alarm">given up</span> after ${x.attempts}: ${esc(x.last_error || "")}` : hook ? `waiting (${x.attempts} tried)` : ""}</td></tr>`).join("")
      || emptyRow(8, "no violation")}</tbody></table>`;
};

// Decorate each page once it is drawn (core.js's done() sets body[data-view] to the page's hash), once per page.
let govDecorated = null;
new MutationObserver(() => {
  const hash = document.body.dataset.view;
  if (!hash) { delete document.body.dataset.labels; return; }  // a page is being drawn
  if (hash !== location.hash && !(hash === "#/" && !location.hash)) return;
  if (govDecorated === nav) { document.body.dataset.labels = hash; return; }  // the URL changed in place (keepInUrl)
  govDecorated = nav;
  const parts = hash.slice(1).split("?")[0].split("/").slice(1).map(decodeURIComponent);
  const jobs = [];
  if (parts[0] === "dataset") jobs.push(govDatasetBadges(hash, parts.slice(1).join("/")));
  if (!["dataset", "violations"].includes(parts[0])) jobs.push(govTableLabels(hash));
  Promise.all(jobs).catch(err => console.warn("labels:", err.message)).finally(() => {
    if (location.hash === hash) document.body.dataset.labels = hash;  // tests wait for this
  });
}).observe(document.body, {attributes: true, attributeFilter: ["data-view"]});
