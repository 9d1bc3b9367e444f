// lineage-listener UI, access control (docs/security.md, "The UI"): who is signed in, the login, the token
// prompt, and datasets withheld from this reader drawn as such. Loaded before core.js: it wraps fetch, so
// every request of the UI carries the tab's token (when it signs in with one) and any 401 shows the login.
"use strict";

const AUTH = {
  TOKEN: "lineage-token",          // the tab's token (sessionStorage: asked once per tab; governance.js reads it too)
  WITHHELD: "withheld ",           // a placeholder's pseudo dataset name: "withheld 1" (no real name is a word and a number)
  config: null,
  shown: false,

  /** Placeholders as the graphs draw datasets: ``{"dataset": null, "placeholder": "w1"}`` -> "withheld 1". */
  drawable(value) {
    if (Array.isArray(value)) return value.map(v => AUTH.drawable(v));
    if (!value || typeof value !== "object") return value;
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = AUTH.drawable(v);
    const name = p => AUTH.WITHHELD + String(p).replace(/^w/, "");
    if (out.placeholder && out.dataset === null) {
      out.dataset = name(out.placeholder);
      if ("column" in out) out.column = "(withheld)";
    }
    for (const end of ["source", "target"]) {
      const p = out[`${end}_placeholder`];
      if (!p) continue;
      if (out[end] === null || typeof out[end] === "string") out[end] = name(p);
      else if (!Array.isArray(out[end])) out[end] = {...out[end], dataset: name(p), column: "(withheld)"};
    }
    return out;
  },

  async me() {
    const r = await window.fetch("/auth/me");
    return r.ok ? r.json() : null;
  },

  /** The header's "signed in as": who, their groups, and sign out. */
  signedIn(who) {
    let box = document.getElementById("auth-user");
    if (!box) {
      box = document.createElement("span");
      box.id = "auth-user";
      document.querySelector("header").appendChild(box);
    }
    const groups = who.groups && who.groups.length ? ` (${who.groups.join(", ")})` : "";
    box.innerHTML = `signed in as <b id="auth-name">${esc(who.name)}</b>${esc(groups)}${who.admin ? " · admin" : ""}
      <button type="button" id="auth-signout">sign out</button>`;
    document.getElementById("auth-signout").onclick = () => AUTH.signOut();
  },

  async signOut() {
    sessionStorage.removeItem(AUTH.TOKEN);
    await window.fetch("/auth/logout", {method: "POST"}).catch(() => null);
    const box = document.getElementById("auth-user");
    if (box) box.remove();
    AUTH.shown = false;
    AUTH.signIn();
  },

  /** The login, over the page: the issuer's sign-in, a token form, or what the proxy should have done. */
  signIn(message) {
    if (AUTH.shown || !AUTH.config || !AUTH.config.access) return;
    AUTH.shown = true;
    const box = document.createElement("div");
    box.id = "auth-login";
    box.setAttribute("role", "dialog");
    const login = AUTH.config.login;
    const next = encodeURIComponent(location.pathname + location.hash);
    box.innerHTML = `<div class="auth-card"><h2>Sign in to lineage-listener</h2>
      ${message ? `<p class="auth-message">${esc(message)}</p>` : ""}
      ${login === "oidc" ? `<p><a id="auth-oidc" class="auth-button" href="/auth/login?next=${next}">Sign in</a></p>
        <p class="auth-hint">or use a token:</p>` : ""}
      ${login === "proxy" ? `<p>The proxy in front of this server did not sign you in.</p>` : `
      <form id="auth-token-form"><label>token <input id="auth-token" type="password" autocomplete="off" size="30"></label>
        <button type="submit">use it</button><span id="auth-status" role="status"></span></form>`}</div>`;
    document.body.appendChild(box);
    const form = document.getElementById("auth-token-form");
    if (form) form.onsubmit = async ev => {
      ev.preventDefault();
      sessionStorage.setItem(AUTH.TOKEN, document.getElementById("auth-token").value.trim());
      const who = await AUTH.me();
      if (!who || !who.name) {
        sessionStorage.removeItem(AUTH.TOKEN);
        document.getElementById("auth-status").textContent = "this token was refused";
        return;
      }
      location.reload();
    };
  },

  /** Withheld datasets drawn as such once a graph is on screen, and how many the page withheld. */
  decorate() {
    const cy = window.lineageGraph;
    if (!cy || cy.destroyed()) return;
    const held = cy.nodes().filter(n => String(n.data("dataset") || "").startsWith(AUTH.WITHHELD));
    if (!held.length) return;
    held.addClass("withheld");
    held.on("tap", ev => ev.stopPropagation());  // nothing to open: the reader may not read it
    cy.style().selector("node.withheld").style({"background-color": "#e3e3e3", "border-style": "dashed",
      "border-color": "#888", "color": "#555"}).update();
    const boxes = new Set(held.map(n => n.data("dataset"))).size;
    const summary = document.getElementById("summary");
    if (summary && !document.getElementById("auth-withheld")) {
      summary.insertAdjacentHTML("beforeend", ` · <span id="auth-withheld" class="auth-withheld">${plural(boxes, "dataset")} `
        + `withheld (you may not read ${boxes === 1 ? "it" : "them"})</span>`);
    }
  },
};

// Every request of the UI: the tab's token when it has one (an empty "Bearer" from a form goes, so a session's
// cookie signs instead); a 401 shows the login; graph answers draw their placeholders.
AUTH.fetch = window.fetch.bind(window);
window.fetch = async (input, init = {}) => {
  const url = new URL(typeof input === "string" ? input : input.url, location.href);
  if (url.origin !== location.origin) return AUTH.fetch(input, init);
  const headers = new Headers(init.headers || (input instanceof Request ? input.headers : undefined));
  if ((headers.get("Authorization") || "").trim() === "Bearer") headers.delete("Authorization");
  const token = sessionStorage.getItem(AUTH.TOKEN);
  if (token && !headers.has("Authorization")) headers.set("Authorization", `Bearer ${token}`);
  const r = await AUTH.fetch(input, {...init, headers, credentials: "same-origin"});
  if (r.status === 401 && !url.pathname.startsWith("/auth/")) AUTH.signIn("Your session has ended, or this page needs a sign-in.");
  if (r.ok && (url.pathname.startsWith("/v3/") || url.pathname === "/api/overview" || url.pathname === "/api/impact")) {
    const body = await r.json();
    return new Response(JSON.stringify(AUTH.drawable(body)), {status: r.status, statusText: r.statusText, headers: r.headers});
  }
  return r;
};

window.addEventListener("DOMContentLoaded", async () => {
  const r = await AUTH.fetch("/auth/config").catch(() => null);
  AUTH.config = r && r.ok ? await r.json() : {access: false};
  if (r && r.status === 429) {
    AUTH.config = {access: true, login: null};
    AUTH.signIn("Too many failed sign-ins from here: try again in a minute.");
    return;
  }
  if (!AUTH.config.access) return;
  const who = await AUTH.me();
  if (who && who.name) AUTH.signedIn(who);
  else AUTH.signIn();
  new MutationObserver(() => { if (document.body.dataset.view) AUTH.decorate(); })
    .observe(document.body, {attributes: true, attributeFilter: ["data-view"]});
});
