// lineage-listener UI, the router: the hash names the page (PAGES, filled by the views), each navigation
// draws it; the header's search box.
"use strict";
/** A list page's ``offset`` and page size (``limit``) from its URL query. */
function offsetOf(q) { return Math.max(0, parseInt(q.get("offset") || "0", 10) || 0); }
function sizeOf(q) { return Math.min(500, Math.max(1, parseInt(q.get("limit") || String(PAGE), 10) || PAGE)); }

/**
 * Where a "did you mean" name leads on the page of ``parts``: the same kind of page for the name suggested
 * (a run for a run, an application's changes for an application's), a dataset page otherwise.
 */
function hintHref(parts) {
  if (parts[0] === "changes" && parts.length > 2) return h => `#/changes/${parts[1]}/${enc(h)}`;
  if (["run", "overview"].includes(parts[0])) return h => `#/${parts[0]}/${enc(h)}`;
  return h => `#/dataset/${enc(h)}`;
}

// Back and Forward return to where the reader was on each page: every history entry gets an id (in its state),
// the page's scroll position is kept per id while it is shown, and put back once the page is drawn again.
const scrolls = new Map();
let shownEntry = null;
function entryId() {
  const state = history.state || {};
  if (!state.entry) history.replaceState({...state, entry: `${Date.now()}-${Math.random()}`}, "");
  return history.state.entry;
}
window.addEventListener("scroll", () => { if (shownEntry) scrolls.set(shownEntry, window.scrollY); }, {passive: true});

async function route() {
  // the page being left keeps where it was now: a scroll event may not have been dispatched yet
  if (shownEntry) scrolls.set(shownEntry, window.scrollY);
  const n = newNav();
  const entry = entryId();
  shownEntry = null;
  window.scrollTo(0, 0);  // a new page starts at its top, whatever the last one was scrolled to
  const hash = location.hash.slice(1) || "/";
  const [path, query] = hash.split("?");
  const q = new URLSearchParams(query || "");
  const parts = path.split("/").slice(1).map(decodeURIComponent);
  hideSuggestions();
  try {
    await (PAGES[parts[0]] || PAGES[""])(n, parts.slice(1), q);
  } catch (err) {
    if (err instanceof Stale || !n.live()) return;
    view.innerHTML = errorBox(err, err.closest && err.closest.length ? hintHref(parts) : null);
  }
  if (!n.live()) return;
  if (scrolls.has(entry)) window.scrollTo(0, scrolls.get(entry));  // back (or forward) to a page seen before
  shownEntry = entry;
  done(n);
}

searchBox();
history.scrollRestoration = "manual";
window.addEventListener("hashchange", route);
route();
