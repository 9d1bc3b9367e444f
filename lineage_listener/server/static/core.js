// lineage-listener UI, the core every page shares: helpers, navigations and requests, the page registry.
//
// The UI is plain scripts sharing one global scope, loaded in index.html's order: core.js, controls.js (the
// window form, errors, the legend), layout.js (the graph's layered layout), graph.js (drawing), explore.js
// (clicks, hops, boxes, jobs), governance.js (labels and violations), one file per view under views/ (each
// adds its pages to PAGES), changes.js, then router.js, which reads the URL and calls the page. Every
// navigation starts a Nav: its AbortController cancels the previous page's requests, and a response that
// arrives for an older Nav is dropped (a slow earlier answer never draws over a later page). The old page's
// cytoscape instances are destroyed before the next page draws.
"use strict";
const view = document.getElementById("view");
const tip = document.getElementById("tooltip");
const PAGE = 50;
const STATUS_WORDS = {unmasked: "unmasked (clear copy)", partly: "partly masked", masked: "masked on every path"};
// what a column's ``reach`` (and a copy's ``masking``) says, on hover; docs/reference/semantics.md, copies and influence
const COPY_WORDS = {unmasked: "unmasked copy of the start", partly: "partly masked copy of the start",
                    masked: "masked copy of the start (masked on every path)"};
// the API's parameter names in the words of the form's fields
const FIELD_WORDS = {maxLevels: "depth", depth: "depth", start: "from", end: "to", since: "from", until: "to",
                     directOnly: "direct only", direction: "direction", offset: "page", limit: "page size"};
/** The pages, by the first part of their hash (``#/dataset/...`` is PAGES.dataset): each is
 * ``async (nav, parts, query)`` with the hash's later parts (decoded) and its URL query. */
const PAGES = {};

// ---------------------------------------------------------------- helpers
function esc(s) { return String(s ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c])); }
function enc(s) { return encodeURIComponent(s); }
function $(id) { return document.getElementById(id); }
/** A store timestamp (naive UTC, ISO) as "2026-11-23 20:35:25 UTC". */
function when(t) {
  if (!t) return "";
  const m = String(t).match(/^(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)/);
  return m ? `${m[1]} ${m[2]} UTC` : String(t);
}
function duration(ms) {
  if (ms === null || ms === undefined) return "";
  if (ms < 1000) return `${ms} ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)} s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m} min ${Math.round(s - m * 60)} s` : `${Math.floor(m / 60)} h ${m % 60} min`;
}
/** A count and its noun: plural(1, "query") is "1 query", plural(2, "query") "2 queries", plural(3, "batch") "3 batches". */
function plural(n, word) { return `${thousands(n)} ${n === 1 ? word : plurals(word)}`; }
/** A number with its thousands grouped, as ``toLocaleString("en")`` writes it (1234567 is "1,234,567"); a whole
 * number without Intl, whose first use on a page costs 20-90 ms of loading its number formats. */
function thousands(n) { return Number.isSafeInteger(n) ? String(n).replace(/\B(?=(\d{3})+$)/g, ",") : n.toLocaleString("en"); }
/** The plural of the nouns the pages count: "copy" -> "copies", "batch" -> "batches", "run" -> "runs". */
function plurals(word) {
  if (/[^aeiou]y$/.test(word)) return word.slice(0, -1) + "ies";
  if (/(s|x|z|ch|sh)$/.test(word)) return word + "es";
  return word + "s";
}
function datasetLink(d) { return `<a href="#/dataset/${enc(d)}" title="${esc(d)}">${esc(d)}</a>`; }
function columnHref(ds, col, query) { return `#/column/${enc(ds)}/${enc(col)}${query ? "?" + query : ""}`; }
function impactHref(ds, col, query) { return `#/impact/${enc(ds)}/${enc(col)}${query ? "?" + query : ""}`; }
function setTitle(...parts) { document.title = [...parts.filter(Boolean), "lineage-listener"].join(" · "); }
/** A table row saying a table is empty, across its ``cols`` columns: "no run", "none recorded". */
function emptyRow(cols, words) { return `<tr class="empty"><td colspan="${cols}" class="none">${esc(words)}</td></tr>`; }

// ---------------------------------------------------------------- navigation and requests
class Stale extends Error {}
class ApiError extends Error {
  constructor(status, detail) {
    const text = typeof detail === "string" ? detail : (detail && detail.error) || JSON.stringify(detail);
    super(inFieldWords(text));
    this.status = status;
    const hint = typeof detail === "object" && detail && detail.closest ? detail.closest
      : ((text.match(/closest known: (.*)$/) || [])[1] || "").split(", ").filter(Boolean);
    this.closest = hint;
  }
}
function inFieldWords(text) {
  return String(text).replace(/^bad parameter /, "").replace(/\b(maxLevels|directOnly|start|end|since|until|depth|offset|limit)\b(?=:)/g,
    name => FIELD_WORDS[name] || name).replace(/^bad time/, "bad time").replace(/--since/g, "from").replace(/--until/g, "to");
}

let nav = null;
function newNav() {
  if (nav) nav.ctrl.abort();
  destroyGraphs();
  delete document.body.dataset.view;
  const n = {id: (nav ? nav.id : 0) + 1, ctrl: new AbortController(), hash: location.hash || "#/"};
  n.live = () => nav === n;
  nav = n;
  return n;
}
/** GET a JSON body for navigation ``n``; throws Stale when ``n`` is no longer the current page. */
async function getJSON(n, url) {
  let r, body;
  try {
    r = await fetch(url, {signal: n.ctrl.signal});
    body = await r.json();
  } catch (err) {
    if (!n.live() || err.name === "AbortError") throw new Stale();
    throw err;
  }
  if (!n.live()) throw new Stale();
  if (!r.ok) throw new ApiError(r.status, body.detail);
  return body;
}
/** Navigation ``n``'s page is drawn, its graph whole (graph.js's mountGraph): tests wait for this. */
function done(n) {
  const cy = window.lineageGraph, whole = cy && !cy.destroyed() && cy.scratch("whole");
  const mark = () => { if (n.live()) document.body.dataset.view = n.hash; };
  if (whole) whole.then(mark); else mark();
}

/**
 * Set (or, with ``value`` null, drop) ``key`` in the URL's query without drawing the page again: a choice made
 * on the page (the jobs toggle) that a reload or a shared link keeps.
 */
function keepInUrl(key, value) {
  const [path, query] = location.hash.split("?");
  const q = new URLSearchParams(query || "");
  if (value === null) q.delete(key); else q.set(key, value);
  const hash = `${path}${q.toString() ? "?" + q : ""}`;
  history.replaceState(history.state, "", hash);
  if (nav) {
    const drawn = document.body.dataset.view === nav.hash;
    nav.hash = hash;
    if (drawn) document.body.dataset.view = hash;
  }
}

// ---------------------------------------------------------------- graph libraries, loaded on graph pages only
let libsLoading = null;
function loadGraphLibs() {
  if (window.cytoscape) return Promise.resolve();
  if (!libsLoading) {
    const load = src => new Promise((ok, fail) => {
      const s = document.createElement("script");
      s.src = src; s.onload = ok; s.onerror = () => fail(new Error(`could not load ${src}`));
      document.head.appendChild(s);
    });
    libsLoading = load("/static/vendor/cytoscape.min.js");
  }
  return libsLoading;
}

let graphs = [];  // cytoscape instances of the current page
function destroyGraphs() {
  for (const g of graphs) g.destroy();
  graphs = [];
  window.lineageGraph = null;
  tip.hidden = true;
}

