"""Identities from an OpenID Connect issuer (docs/security.md): a real provider (``oidc-provider-mock``,
Authlib's authorization server, tests/oidc_provider.py) on another site than the lineage server.

Bearer JWTs, good and bad: expired, not valid yet, ``alg: none``, HS256 signed with the issuer's public
key, another issuer's key, the wrong audience, truncated, a 1 MB header: each 401, none 500, the server
stays up. The UI's login in Chromium: authorization code with PKCE, the session cookie's flags, who is
signed in, withheld datasets drawn as such, no Content-Security-Policy violation, sign out, a session
that expires, and the token prompt of a server without an issuer.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import http.cookiejar
import json
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")
jwt = pytest.importorskip("jwt")
pytest.importorskip("oidc_provider_mock")

from tests.access_pipeline import READER  # noqa: E402
# the provider is Authlib's; its deprecation notices are about Authlib, not about what is tested here
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
from tests.oidc_provider import Provider, provider  # noqa: E402
from tests.server_helpers import Server  # noqa: E402
from tests.test_access import RAW, SUMMARY, TOTALS, request, url_of  # noqa: E402

CLIENT = "lineage"
USERS = {"ann": {"groups": ["analysts"], "preferred_username": "ann"},
         "pia": {"groups": ["privacy"], "preferred_username": "pia"}}
SECRETS = {"LL_OIDC_SECRET": "client-secret-0123456789", "LL_T_READER": "reader-secret-0123456789abcdef"}


def access_file(issuer: str | None) -> str:
    oidc = (f"oidc: {{issuer: '{issuer}', audience: {CLIENT}, groups_claim: groups, client_id: {CLIENT}, "
            f"client_secret_env: LL_OIDC_SECRET}}\n") if issuer else ""
    return (oidc + "tokens: [{name: ann, env: LL_T_READER, groups: [analysts]}]\n"
            "proxy: {trusted: [127.0.0.1/32]}\n"  # so each test is a client of its own (X-Forwarded-For)
            f"grants:\n  - {{groups: [analysts], read: {json.dumps(list(READER))}}}\n"
            "  - {groups: [privacy], read: ['**'], admin: true}\n")


def serve(store: Path, out: Path, issuer: str | None, tls: tuple[Path, Path, Path] | None = None) -> Server:
    copy = out / f"{store.stem}-{time.monotonic_ns()}.duckdb"
    shutil.copy(store, copy)
    (out / "access.yml").write_text(access_file(issuer))
    return Server(copy, extra_args=["--access", str(out / "access.yml")], env=SECRETS, output=out / "serve.log",
                  tls=tls).start()


@pytest.fixture(scope="module")
def idp():
    with provider(USERS) as p:
        yield p


@pytest.fixture(scope="module")
def served(access_store, idp, tmp_path_factory):
    srv = serve(access_store, tmp_path_factory.mktemp("oidc"), idp.issuer)
    yield srv
    srv.stop()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unsigned(header: dict, claims: dict) -> str:
    return f"{_b64(json.dumps(header).encode())}.{_b64(json.dumps(claims).encode())}"


def bad_tokens(idp: Provider, good: str) -> dict[str, str]:
    """Bearer values the server must refuse, by what is wrong with them."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    now = int(time.time())
    claims = {"sub": "ann", "aud": CLIENT, "groups": ["privacy"], "preferred_username": "ann"}
    public = serialization.load_pem_private_key(idp.private_pem(), None).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    hs = _unsigned({"alg": "HS256", "typ": "JWT"}, {**claims, "iss": idp.issuer, "exp": now + 600})
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "expired": idp.sign({**claims, "exp": now - 3600, "iat": now - 7200}),
        "not valid yet": idp.sign({**claims, "exp": now + 7200, "nbf": now + 3600}),
        "alg none": _unsigned({"alg": "none", "typ": "JWT"}, {**claims, "iss": idp.issuer, "exp": now + 600}) + ".",
        "HS256 signed with the public key":
            hs + "." + _b64(hmac.new(public, hs.encode(), hashlib.sha256).digest()),
        "another issuer's key": jwt.encode({**claims, "iss": idp.issuer, "exp": now + 600}, other, algorithm="RS256"),
        "another issuer": idp.sign({**claims, "iss": "http://localhost:1/other", "exp": now + 600}),
        "wrong audience": idp.sign({**claims, "aud": "someone-else", "exp": now + 600}),
        "truncated": good[:-12],
        "a 1 MB header": "x" * (1 << 20),
    }


def test_bearer_jwts(served, idp):
    client = {"X-Forwarded-For": "198.51.100.1"}
    good = idp.id_token("ann", CLIENT)
    status, body, _ = request(f"{served.url}/auth/me", good)
    assert status == 200 and json.loads(body)["name"] == "ann" and json.loads(body)["via"] == "oidc"
    assert request(url_of(served.url, "/api/datasets/{dataset}", {"dataset": RAW}), good)[0] == 404
    assert request(url_of(served.url, "/api/datasets/{dataset}", {"dataset": SUMMARY}), good)[0] == 200
    for what, token in bad_tokens(idp, good).items():
        status, body, headers = request(f"{served.url}/api/datasets", token, headers=client)
        assert status == 401, (what, status, body[:300])
        assert token[-40:] not in body and "invalid_token" in headers.get("www-authenticate", ""), what
    assert request(f"{served.url}/healthz")[0] == 200
    assert request(f"{served.url}/api/datasets", good)[0] == 200  # still up, still answering


def test_unknown_key_ids_fetch_the_keys_once_a_minute(served, idp):
    before = idp.paths.count("/jwks")
    for i in range(15):
        token = idp.sign({"sub": "ann", "aud": CLIENT, "exp": int(time.time()) + 600}, kid=f"made-up-{i}")
        assert request(f"{served.url}/auth/me", token, headers={"X-Forwarded-For": "198.51.100.2"})[0] == 401
    assert idp.paths.count("/jwks") - before <= 1


def session(served: Server, idp: Provider, sub: str) -> http.cookiejar.CookieJar:
    """A signed-in session as a browser gets it: /auth/login, the issuer's form, the callback."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar),
                                         urllib.request.HTTPSHandler(context=served.context))
    with opener.open(f"{served.url}/auth/login?next=/") as r:  # follows to the issuer's form
        authorize = r.url
    with opener.open(urllib.request.Request(authorize, data=urllib.parse.urlencode({"sub": sub}).encode())) as r:
        assert r.url.startswith(served.url)  # back through the callback to the UI
    return jar


def test_browser_writes_are_checked_against_cross_site_requests(served, idp):
    jar = session(served, idp, "pia")
    cookie = "; ".join(f"{c.name}={c.value}" for c in jar if c.name == "lineage_session")
    label = json.dumps({"dataset": TOTALS, "column": "doubled", "label": "reviewed.csrf"}).encode()
    write = lambda origin: request(f"{served.url}/api/labels", method="POST", body=label,  # noqa: E731
                                   headers={"Cookie": cookie, **({"Origin": origin} if origin else {})})
    assert write("http://evil.example")[0] == 403
    assert write(None)[0] == 403
    assert write(served.url)[0] == 200
    status, body, _ = request(f"{served.url}/auth/me", headers={"Cookie": cookie})
    assert status == 200 and json.loads(body)["via"] == "session" and json.loads(body)["admin"] is True


def test_over_tls_the_cookies_are_secure(access_store, idp, tmp_path):
    from tests.certs import Certs

    srv = serve(access_store, tmp_path, idp.issuer, tls=Certs(tmp_path).server)
    try:
        jar = session(srv, idp, "ann")
        flags = {c.name: c.secure for c in jar}
        assert flags == {"lineage_session": True}, flags  # the login's cookie is gone, the session's Secure
        with urllib.request.urlopen(f"{srv.url}/healthz", context=srv.context) as r:
            assert r.headers["strict-transport-security"].startswith("max-age=")
    finally:
        srv.stop()


# -- the UI, in Chromium -------------------------------------------------------------------------------

CSP_WATCH = """window.__csp = [];
document.addEventListener("securitypolicyviolation", e => window.__csp.push(`${e.violatedDirective} ${e.blockedURI}`));"""


@pytest.fixture(scope="module")
def browser():
    import shutil as sh

    chromium = sh.which("chromium") or sh.which("chromium-browser")
    if not chromium:
        pytest.skip("no chromium (make install adds Debian's chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-gpu"])
        yield b
        b.close()


def sign_in(page: Any, sub: str) -> None:
    """Click the UI's sign-in, pick ``sub`` on the issuer's page, come back signed in."""
    page.click("#auth-oidc")
    page.wait_for_selector("input[name=sub]")
    page.fill("input[name=sub]", sub)
    page.click("button[type=submit]:has-text('Authorize')")
    page.wait_for_selector("#auth-name")


def test_login_in_the_browser(served, browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    ctx.add_init_script(CSP_WATCH)
    page = ctx.new_page()
    column = f"#/column/{urllib.parse.quote(TOTALS, safe='')}/top_email"
    page.goto(served.url + "/" + column)
    page.wait_for_selector("#auth-login #auth-oidc")
    sign_in(page, "ann")
    assert page.text_content("#auth-name") == "ann" and "analysts" in page.text_content("#auth-user")
    assert page.evaluate("location.hash") == column  # back where the login started
    page.wait_for_selector("#auth-withheld")  # the graph is drawn, and its withheld datasets marked
    held = page.evaluate("window.lineageGraph.nodes('.withheld').map(n => n.data('dataset'))")
    assert sorted(set(held)) == ["withheld 1", "withheld 2", "withheld 3"]
    assert "3 datasets withheld" in page.text_content("#auth-withheld")
    assert RAW not in page.content()
    cookies = {c["name"]: c for c in ctx.cookies()}
    assert cookies["lineage_session"]["httpOnly"] and cookies["lineage_session"]["sameSite"] == "Strict"
    assert not cookies["lineage_session"]["secure"]  # plain HTTP here; Secure over TLS
    assert "lineage_login" not in cookies  # the login's own cookie is gone once it is used
    assert page.evaluate("document.cookie") == ""  # HttpOnly: no script reads it
    for path in ("/#/", f"/#/dataset/{urllib.parse.quote(SUMMARY, safe='')}", "/#/runs", "/docs"):
        page.goto(served.url + path)
        page.wait_for_load_state("networkidle")
    page.wait_for_selector("#swagger-ui .info")  # Swagger UI started from its file
    page.goto(served.url + "/")
    page.wait_for_selector("#auth-signout")
    assert page.evaluate("window.__csp") == []
    page.click("#auth-signout")
    page.wait_for_selector("#auth-login")
    assert page.evaluate("fetch('/auth/me').then(r => r.status)") == 401
    ctx.close()


def test_an_expired_session_goes_back_to_the_login(access_store, browser, tmp_path):
    with provider(USERS, token_max_age=4) as short:
        srv = serve(access_store, tmp_path, short.issuer)
        try:
            page = browser.new_page()
            page.goto(srv.url + "/")
            page.wait_for_selector("#auth-oidc")
            sign_in(page, "ann")
            ends = page.evaluate("fetch('/auth/me').then(r => r.json()).then(m => m.expires)")
            assert 0 < ends - time.time() < 10
            page.wait_for_timeout((ends - time.time() + 0.5) * 1000)  # the session's own end
            page.goto(srv.url + "/#/runs")
            page.reload()
            page.wait_for_selector("#auth-login #auth-oidc")
            assert page.query_selector("#auth-name") is None
            page.close()
        finally:
            srv.stop()


def test_a_token_is_asked_once_per_tab(access_store, browser, tmp_path):
    srv = serve(access_store, tmp_path, None)
    try:
        ctx = browser.new_context()
        ctx.add_init_script(CSP_WATCH)
        page = ctx.new_page()
        page.goto(srv.url + "/")
        page.wait_for_selector("#auth-token-form")
        assert page.query_selector("#auth-oidc") is None  # no issuer: the token is the only way
        page.fill("#auth-token", "a-wrong-token-0123456789")
        page.click("#auth-token-form button")
        page.wait_for_selector("#auth-status:has-text('refused')")
        page.fill("#auth-token", SECRETS["LL_T_READER"])
        page.click("#auth-token-form button")
        page.wait_for_selector("#auth-name")
        page.wait_for_selector("body[data-view='#/']")
        assert RAW not in page.content() and "acc_marts" in page.content()
        other = ctx.new_page()  # another tab of the same browser: asked again
        other.goto(srv.url + "/")
        other.wait_for_selector("#auth-token-form")
        assert page.evaluate("window.__csp") == [] and other.evaluate("window.__csp") == []
        ctx.close()
    finally:
        srv.stop()
