// lineage-listener UI, the router: the hash names the page (PAGES, filled by the views), each navigation
// draws it; the header's search box.
"use strict";
/** A list page's ``offset`` and page size (``limit``) from its URL query. */
function offsetOf(q) { return Math.max(0, parseInt(q.get("offset") || "0", 10) || 0); }
function sizeOf(q) { return Math.min(500, Math.max(1, parseInt(q.get("limit") || String(PAGE), 10) || PAGE)); }

async function route() {
  const n = newNav();
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
    const hint = err.closest && err.closest.length ? h => `#/dataset/${enc(h)}` : null;
    view.innerHTML = errorBox(err, hint);
  }
  done(n);
}

searchBox();
history.scrollRestoration = "manual";
window.addEventListener("hashchange", route);
route();
