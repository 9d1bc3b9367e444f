// lineage-listener UI, search: the dataset list and search results (#/, #/search), and the header's
// search box with its suggestions.
"use strict";
async function home(n, q, offset, size) {
  setTitle(q ? `search “${q}”` : "datasets");
  const p = new URLSearchParams({q: q || "", offset, limit: size, what: q ? "all" : "datasets"});
  const r = await getJSON(n, `/api/search?${p}`);
  const pager = (total, key) => {
    if (total <= size) return "";
    const href = o => `#/${q ? "search" : ""}?${new URLSearchParams({...(q ? {q} : {}), offset: o, ...(size !== PAGE ? {limit: size} : {})})}`;
    return `<p class="pager">${offset > 0 ? `<a id="prev-${key}" href="${href(Math.max(0, offset - size))}">← previous</a>` : ""}
      showing ${Math.min(total, offset + 1)}–${Math.min(total, offset + size)} of ${thousands(total)}
      ${offset + size < total ? `<a id="next-${key}" href="${href(offset + size)}">next →</a>` : ""}</p>`;
  };
  let html = `<h2>${q ? `Datasets and columns matching “${esc(q)}”` : "Datasets"}</h2>
    <p class="count" id="datasets-count">${plural(r.datasets_total, "dataset")}</p>
    <table id="datasets"><thead><tr><th>dataset</th><th>kind</th><th>format</th><th>columns</th><th>last seen</th></tr></thead><tbody>
    ${r.datasets.map(d => `<tr><td>${datasetLink(d.dataset)}${similar(d)}</td><td>${esc(d.kind)}</td><td>${esc(d.format)}</td>
      <td>${d.columns}</td><td>${esc(when(d.last_seen))}</td></tr>`).join("") || emptyRow(5, q ? "no dataset matches" : "no dataset captured yet")}</tbody></table>${pager(r.datasets_total, "datasets")}`;
  if (q) {
    html += `<h3 id="columns-count">${plural(r.columns_total, "column")}</h3>
      <table id="column-results"><thead><tr><th>column</th><th>type</th><th>dataset</th><th></th></tr></thead><tbody>
      ${r.columns.map(c => `<tr><td><a class="column" href="${columnHref(c.dataset, c.column)}">${esc(c.column)}</a>${similar(c)}</td><td>${esc(c.type)}</td>
        <td>${datasetLink(c.dataset)}</td><td><a href="${impactHref(c.dataset, c.column)}">impact</a></td></tr>`).join("") || emptyRow(4, "no column matches")}</tbody></table>
      ${pager(r.columns_total, "columns")}`;
  }
  view.innerHTML = html;
}

/** A search hit's mark when its name only resembles the words typed (the API's ``match`` is "fuzzy"). */
function similar(hit) { return hit.match === "fuzzy" ? ` <small class="similar" title="a similar name, not the words typed">≈</small>` : ""; }
let suggestCtrl = null, suggestTimer = null;
function hideSuggestions() { const s = $("suggestions"); if (s) { s.hidden = true; s.innerHTML = ""; } }
async function suggest(text) {
  if (suggestCtrl) suggestCtrl.abort();
  if (!text.trim()) { hideSuggestions(); return; }
  const ctrl = suggestCtrl = new AbortController();
  let r;
  try {
    r = await (await fetch(`/api/search?q=${enc(text)}&limit=6`, {signal: ctrl.signal})).json();
  } catch (err) { return; }
  if (ctrl !== suggestCtrl) return;  // a later keystroke asked again
  const box = $("suggestions");
  box.innerHTML = [
    ...r.datasets.map(d => `<li><a href="#/dataset/${enc(d.dataset)}"><span class="kind">dataset</span> ${esc(d.dataset)}${similar(d)}</a></li>`),
    ...r.columns.map(c => `<li><a href="${columnHref(c.dataset, c.column)}"><span class="kind">column</span> <b>${esc(c.column)}</b>${similar(c)} <small>${esc(c.dataset)}</small></a></li>`),
    `<li><a href="#/search?q=${enc(text)}">all ${plural(r.datasets_total, "dataset")} and ${plural(r.columns_total, "column")} matching “${esc(text)}”</a></li>`,
  ].join("");
  box.hidden = false;
}

/** The header's search box: suggestions as you type, arrow keys through them, Enter for all results. */
function searchBox() {
  const input = $("search");
  $("search-form").onsubmit = ev => {
    ev.preventDefault();
    location.hash = `#/search?q=${enc(input.value)}`;
  };
  input.addEventListener("input", () => { clearTimeout(suggestTimer); suggestTimer = setTimeout(() => suggest(input.value), 120); });
  input.addEventListener("keydown", ev => {
    if (ev.key === "ArrowDown") { const a = document.querySelector("#suggestions a"); if (a) { ev.preventDefault(); a.focus(); } }
    if (ev.key === "Escape") hideSuggestions();
  });
  $("suggestions").addEventListener("keydown", ev => {
    const links = [...document.querySelectorAll("#suggestions a")], i = links.indexOf(document.activeElement);
    if (ev.key === "ArrowDown" && i < links.length - 1) { ev.preventDefault(); links[i + 1].focus(); }
    if (ev.key === "ArrowUp") { ev.preventDefault(); (i > 0 ? links[i - 1] : input).focus(); }
    if (ev.key === "Escape") { hideSuggestions(); input.focus(); }
  });
  document.addEventListener("click", ev => { if (!ev.target.closest("#search-form, #suggestions")) hideSuggestions(); });
}

PAGES[""] = PAGES.search = (n, parts, q) => home(n, q.get("q"), offsetOf(q), sizeOf(q));
