// lineage-listener UI, the graph as one file (``lineage-listener html``): the payload inlined as
// window.LINEAGE_STATIC, drawn without a server.
"use strict";
function showStatic(data) {
  document.querySelector("header form").hidden = true;
  setTitle(data.start.column, data.start.dataset);
  view.innerHTML = `<h2 class="mono">${esc(data.start.dataset)} [${esc(data.start.column)}]</h2>
    <p>${esc(data.direction)} lineage, written ${esc(data.written_at)} by lineage-listener html</p>
    ${windowNote(data)}<p id="summary"></p>${graphFrame("lineage graph", {jobs: true, legend: legend(data.direction)})}`;
  const opts = {};
  const cy = draw(data, opts);
  showSelection(cy, cy.nodes("[start = 1]")[0] || null, opts);
}

showStatic(window.LINEAGE_STATIC);
