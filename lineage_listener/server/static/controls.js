// lineage-listener UI, the controls graph pages share: the time window and depth in the URL and the form,
// field errors in the field's own words, the window notice, the legend, error boxes.
"use strict";
function timeHelp() { return `<span class="help">UTC · 2026-11-23, 2026-11-23T19:49:25, or an age: 30s, 24h, 7d</span>`; }
/** The time presets: a window from an age until now, as the URL says it (``from=24h``). */
const PRESETS = [["", "any time"], ["1h", "last hour"], ["24h", "last 24 hours"], ["7d", "last 7 days"], ["30d", "last 30 days"]];
/** The preset the URL query ``p`` names ("" for any time), or "custom" for any other window. */
function presetOf(p) {
  const from = p.get("from") || "", to = p.get("to") || "";
  return !to && PRESETS.some(([v]) => v === from) ? from : "custom";
}
/**
 * The window (and, when the URL names one, depth) fields of a graph page's form, filled from its URL query
 * ``p`` (``windowQuery``): a preset, or a custom range typed (a time or an age) or picked in a calendar. A
 * depth field shows only for a URL that limits the depth: the graph's + handles add hops one at a time.
 */
function windowFields(p) {
  const preset = presetOf(p);
  const option = ([v, words]) => `<option value="${v}"${v === preset ? " selected" : ""}>${words}</option>`;
  return `<label>time <select id="window-preset">${[...PRESETS, ["custom", "custom range…"]].map(option).join("")}</select></label>
      <span id="custom-window" class="custom-window"${preset === "custom" ? "" : " hidden"}>
        <label>from <input id="from" type="text" size="20" placeholder="any time" value="${esc(p.get("from") ?? "")}"></label>
        <input id="from-pick" type="datetime-local" step="1" aria-label="pick when the window starts (UTC)" title="pick a date (UTC)">
        <label>to <input id="to" type="text" size="20" placeholder="now" value="${esc(p.get("to") ?? "")}"></label>
        <input id="to-pick" type="datetime-local" step="1" aria-label="pick when the window ends (UTC)" title="pick a date (UTC)">
        ${timeHelp()}</span>
      ${p.has("depth") ? `<label>depth <input id="depth" type="text" inputmode="numeric" size="4" placeholder="all" value="${esc(p.get("depth"))}"></label>` : ""}`;
}
/**
 * Wire the window fields: a preset applies at once (``apply``: submit the form), "custom range…" shows the
 * typed fields; a date picked in a calendar goes into its field (as UTC), and a date typed shows in the calendar.
 */
function windowControls(apply) {
  const preset = $("window-preset");
  preset.onchange = () => {
    const custom = preset.value === "custom";
    $("custom-window").hidden = !custom;
    if (custom) { $("from").focus(); return; }
    $("from").value = preset.value;
    $("to").value = "";
    apply();
  };
  for (const key of ["from", "to"]) {
    const text = $(key), pick = $(`${key}-pick`);
    const show = () => { const m = text.value.trim().match(/^(\d{4}-\d\d-\d\d)(?:[T ](\d\d:\d\d(?::\d\d)?))?$/); pick.value = m ? `${m[1]}T${m[2] || "00:00:00"}` : ""; };
    show();
    text.addEventListener("input", show);
    pick.onchange = () => { text.value = pick.value.length === 16 ? pick.value + ":00" : pick.value; };
  }
}
/**
 * The time window and depth in a page's URL, in the form's words: ``from``, ``to``, ``depth`` (the API's
 * names ``start``/``since``, ``end``/``until`` and ``maxLevels`` are read too), empty values left out.
 */
function windowQuery(q) {
  const p = new URLSearchParams();
  for (const [key, ...aliases] of [["from", "start", "since"], ["to", "end", "until"], ["depth", "maxLevels"]]) {
    const value = [key, ...aliases].map(k => (q.get(k) || "").trim()).find(Boolean);
    if (value) p.set(key, value);
  }
  return p;
}
/** The form's window (and depth) fields as a URL query (windowQuery's words), or null when the depth is not a number. */
function windowForm() {
  const p = new URLSearchParams();
  for (const key of ["from", "to", "depth"]) if ($(key) && $(key).value.trim()) p.set(key, $(key).value.trim());
  if (p.has("depth") && !/^\d+$/.test(p.get("depth"))) {
    fieldError("depth", "a whole number of hops, 0 or more (empty: all)");
    return null;
  }
  return p;
}
const LINEAGE_NAMES = {from: "start", to: "end", depth: "maxLevels"};
const IMPACT_NAMES = {from: "since", to: "until", depth: "depth"};
/** A page query in the API's parameter names (``names``: LINEAGE_NAMES or IMPACT_NAMES); other keys as they are. */
function apiQuery(p, names) {
  const out = new URLSearchParams();
  for (const [k, v] of p) out.set(names[k] || k, v);
  return out;
}
/** Mark the form field ``id`` invalid and say why beside it. */
function fieldError(id, message) {
  const input = $(id);
  if (!input) return;
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", `${id}-error`);
  let note = $(`${id}-error`);
  if (!note) {
    note = document.createElement("span");
    note.id = `${id}-error`;
    note.className = "field-error";
    note.setAttribute("role", "alert");
    input.after(note);
  }
  note.textContent = message;
}
/**
 * An API answer about a field of the window form goes beside that field: a bad time (the field holding the
 * value), from after to, a bad depth. True when it did; other errors are the caller's.
 */
function blameField(err) {
  if (err instanceof Stale) return false;
  const bad = err.message.match(/^bad time '([^']*)': (?:cannot read time '[^']*': )?(.*)$/);
  if (bad) {
    const id = ["from", "to"].find(k => $(k) && $(k).value.trim() === bad[1]) || "from";
    fieldError(id, `not a time: ${bad[2]}`);
    return true;
  }
  if (/^from .* is after to /.test(err.message)) {
    fieldError("from", "later than “to”");
    return true;
  }
  if (/^depth: /.test(err.message)) {
    fieldError("depth", err.message.replace(/^depth: /, ""));
    return true;
  }
  return false;
}
/**
 * The notice for a time window that leaves captures out (all of them, or some steps): the API's
 * ``window.outside.message``; empty when ``outside`` is null.
 */
function windowNote(answer) {
  const outside = answer && answer.window && answer.window.outside;
  return outside && outside.message ? `<p class="window-note" id="window-note" role="status">${esc(outside.message)}</p>` : "";
}
// the copies a graph draws without a masking colour: upstream (the start is a copy of them) and those written before the window
const COPY_LEGEND = {backward: "the start is a copy of it (direct steps)", forward: "a copy written before the window",
                     both: "the start is a copy of it, or a copy written before the window"};
/**
 * The graph legend: edges, masking colours (a copy's, downstream), influence, hops before the window, and the
 * governance marks around a column (labels it carries, rules it breaks), which never hide its border.
 */
function legend(direction) {
  return `<section class="legend" id="legend"><h4>Legend</h4><span>── direct (carries values: a copy)</span><span>- - - indirect (filter, join, group key)</span>
      <span class="masked">green: masked</span>${direction === "backward" ? ""
        : `<span class="alarm">red: unmasked copy of the start</span><span class="partly">orange: partly masked copy</span>`}
      <span><span class="lg-copy">blue border</span>: ${COPY_LEGEND[direction] || COPY_LEGEND.both}</span>
      <span><span class="lg-influenced">dotted</span>: influenced only, not a copy</span>
      <span class="guess">purple dotted: a guess (a Python function that could not be read)</span>
      <span id="legend-history"><span class="lg-history">faded, ─┤</span>: history, a later write replaced the target</span>
      <span id="legend-before"><span class="lg-before">faded, italic</span>, ○─: written before the window</span>
      <span id="legend-labels"><span class="lg-labelled">purple halo</span> [pii.email]: carries a label</span>
      <span id="legend-violations"><span class="lg-violation">⚠ red dashed halo</span>: breaks a policy rule</span>
      <span><span class="lg-explored">dashed</span>: not on the start's paths (a box opened, one more hop)</span>
      <span><span class="lg-job">⚙ job</span>: the application that wrote the step</span>
      <span>hover for names and expressions</span></section>`;
}
function errorBox(err, hintHref) {
  if (err instanceof Stale) throw err;
  const links = (err.closest || []).map(h => `<a href="${hintHref ? hintHref(h) : "#"}">${esc(h)}</a>`).join(", ");
  return `<div class="error" role="alert">${esc(err.message.replace(/; closest known: .*$/, ""))}${links ? `<br>did you mean ${links}?` : ""}</div>`;
}

