"""The gate every request of the lineage server passes (docs/security.md).

Always: the security headers (a Content-Security-Policy without ``unsafe-inline``,
``X-Content-Type-Options: nosniff``, ``frame-ancestors 'none'``, no referrer, no caching of answers).
With ``serve --access``, before the route runs: a credential in the query string is refused (400); a
client with too many failed logins waits (429); the request's identity (:mod:`.credentials`) and its
grants decide whether the route may answer it (401, 403); a browser's POST is checked against
cross-site request forgery (its ``Origin``); the names it asks about pass the visibility rule's
:meth:`~.visibility.Sight.ask`. After: its answer passes :meth:`~.visibility.Sight.show`, and the
request goes into the audit.
"""
from __future__ import annotations

import json
import logging
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.routing import Match, Mount
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lineage_listener.server.access.accessfile import Grant
from lineage_listener.server.access.audit import Audit
from lineage_listener.server.access.credentials import Credentials, Refused
from lineage_listener.server.access.identity import Identity, Rights, rights_of
from lineage_listener.server.access.oidc import Issuer, looks_like_jwt
from lineage_listener.server.access.ratelimit import Failures
from lineage_listener.server.access.sessions import Logins
from lineage_listener.server.access.visibility import ROUTES, Route, Sight, Unknown
from lineage_listener.store.connection import StoreError
from lineage_listener.store.rows import AuditRow
from lineage_listener.timewindow import utcnow

log = logging.getLogger(__name__)

CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; font-src 'self'; "
       "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
#: Sent with every answer.
HEADERS = ((b"content-security-policy", CSP.encode()), (b"x-content-type-options", b"nosniff"),
           (b"x-frame-options", b"DENY"), (b"referrer-policy", b"no-referrer"))
#: Query parameters that carry credentials: a query string ends up in logs, histories and referrers.
SECRET_PARAMS = frozenset({"access_token", "id_token", "token", "api_key", "apikey", "key", "auth", "authorization",
                           "bearer", "jwt", "password", "secret", "session"})
UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})
#: What an identity with no grant for a route is told.
NEEDS = {"read": "a read grant", "write": "a write grant", "admin": "an admin grant", "identity": "an identity"}
EVERYTHING = Sight()


@dataclass
class Access:
    """Access control of one server (``serve --access``)."""

    credentials: Credentials
    grants: tuple[Grant, ...]
    issuer: Issuer | None = None
    failures: Failures = field(default_factory=Failures)
    logins: Logins = field(default_factory=Logins)
    audit: Audit | None = None

    def rights(self, identity: Identity) -> Rights:
        return rights_of(self.grants, identity)


def sight(request: Request) -> Sight:
    """The request's reader (everything without ``--access``), for routes that ask the store for the
    readable rows only."""
    return request.scope.get("state", {}).get("sight", EVERYTHING)


def identity(request: Request) -> Identity | None:
    return request.scope.get("state", {}).get("identity")


def shown(request: Request, answer: Any) -> Any:
    """``answer`` through the visibility rule, for a route that answers other than JSON
    (``Route.shapes_itself``); the gate shapes every JSON answer itself."""
    reader = sight(request)
    if reader.everything:
        return answer
    with request.app.state.lineage.read() as con:
        return reader.show(con, answer, request.url.path)[0]


def flat(routes: list) -> list:
    """The routes of an application, those of its included routers in their place."""
    out = []
    for r in routes:
        inner = getattr(r, "original_router", None)
        out += flat(inner.routes) if inner is not None else [r]
    return out


def declared(routes: list) -> list[str]:
    """The routes of ``routes`` that :data:`~.visibility.ROUTES` does not declare."""
    missing = []
    for r in flat(routes):
        if isinstance(r, Mount):
            keys = [("GET", r.path)]
        else:
            keys = [(m, r.path) for m in sorted(getattr(r, "methods", None) or ()) if m != "HEAD"]
        missing += [f"{m} {p}" for m, p in keys if (m, p) not in ROUTES]
    return missing


class Gate:
    """The ASGI middleware (see the module docstring); ``access`` None: headers only."""

    def __init__(self, app: ASGIApp, access: Access | None = None) -> None:
        self.app, self.access = app, access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = _with_headers(scope, send)
        scope.setdefault("state", {})
        if self.access is None:
            scope["state"]["sight"] = EVERYTHING
            await self.app(scope, receive, send)
            return
        await _Request(self.access, self.app, scope, receive, send).run()


def _with_headers(scope: Scope, send: Send) -> Send:
    api = scope["path"].startswith(("/api/", "/v3/", "/auth/"))
    tls = scope.get("scheme") == "https"

    async def wrapped(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() not in dict(HEADERS)]
            headers += list(HEADERS)
            if api:
                headers.append((b"cache-control", b"no-store"))
            if tls:
                headers.append((b"strict-transport-security", b"max-age=31536000"))
            message = {**message, "headers": headers}
        await send(message)
    return wrapped


class _Request:
    """One request through the gate."""

    def __init__(self, access: Access, app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
        self.access, self.app, self.scope, self.receive, self.send = access, app, scope, receive, send
        self.request = Request(scope)
        self.template, self.route, self.path_params = _route(scope)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        self.headers = headers
        peer = scope.get("client")[0] if scope.get("client") else None
        self.peer = peer
        self.client = access.credentials.client(peer, headers)
        self.identity: Identity | None = None
        self.datasets: list[str] = []
        self.withheld = 0

    async def run(self) -> None:
        try:
            self._no_secrets_in_query()
            if self.route.needs != "public" or self.template in ("/auth/login", "/auth/callback"):
                wait = self.access.failures.retry_after(self.client)
                if wait is not None:
                    raise _Answer(429, "too many failed logins from this client; retry later",
                                  {"retry-after": str(wait)})
            if self.route.needs == "public":
                await self.app(self.scope, self.receive, self.send)
                return
            try:
                self.identity = self.access.credentials.identify(self.peer, self.headers, self.request.cookies)
            except Refused as exc:
                if exc.status == 401:
                    self.access.failures.failed(self.client)
                raise _Answer(exc.status, exc.detail, {"www-authenticate": 'Bearer error="invalid_token"'}
                              if exc.status == 401 else {}) from None
            if self.identity is None:
                raise _Answer(401, "this server needs an identity (a bearer token, a login or an authenticating "
                                   "proxy)", {"www-authenticate": "Bearer"})
            rights = self.access.rights(self.identity)
            if not _allowed(self.route.needs, rights):
                raise _Answer(403, f"{self.identity.name} has no grant for this ({NEEDS[self.route.needs]} is needed)")
            if self.scope["method"] in UNSAFE and self.identity.via == "session":
                self._same_origin()
            reader = Sight(rights)
            self.scope["state"].update(identity=self.identity, rights=rights, sight=reader)
            await self._answer(reader)
        except _Answer as exc:
            await exc.send(self.send)
            self._audit(exc.status, exc.detail)

    def _no_secrets_in_query(self) -> None:
        query = self.scope.get("query_string", b"").decode("latin-1")
        if not query:
            return
        for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True):
            if key.lower() in SECRET_PARAMS or looks_like_jwt(value) or (
                    16 <= len(value) <= 4096 and self.access.credentials.owns(value)):
                raise _Answer(400, "credentials are never taken from a query string: send "
                                   "'Authorization: Bearer <token>'")

    def _same_origin(self) -> None:
        """A browser's write with the session cookie comes from this server's own pages."""
        origin = self.headers.get("origin")
        if origin is None:
            if self.headers.get("sec-fetch-site") == "same-origin":
                return
            raise _Answer(403, "a write from a browser needs an Origin header (cross-site request forgery check)")
        host = self.headers.get("host", "")
        ours = f"{self.scope.get('scheme', 'http')}://{host}"
        if origin.rstrip("/") != ours:
            raise _Answer(403, "a write from another site was refused (cross-site request forgery check)")

    async def _answer(self, reader: Sight) -> None:
        params = self._params()
        self.datasets = sorted({v for k in (*self.route.datasets, *self.route.dataset_lists)
                                for v in _listed(params.get(k)) if isinstance(v, str)})
        st = self.scope["app"].state.lineage
        if not reader.everything and (self.route.datasets or self.route.dataset_lists or self.route.runs
                                      or self.route.apps):
            try:
                asked = await run_in_threadpool(_ask, st, reader, self.route, params)
            except Unknown as exc:
                raise _Answer(404, exc.body["detail"]) from None
            except StoreError as exc:
                raise _Answer(503, str(exc)) from None
            self._narrow(params, asked)
        if reader.everything or self.route.needs != "read":
            status = await self._pass()
        else:
            status = await self._shaped(st, reader)
        self._audit(status, None)

    def _params(self) -> dict[str, Any]:
        out: dict[str, Any] = dict(self.path_params)
        for key, value in urllib.parse.parse_qsl(self.scope.get("query_string", b"").decode("latin-1"),
                                                 keep_blank_values=True):
            if key in out and key in (*self.route.dataset_lists, *self.route.runs):
                out[key] = [*_listed(out[key]), value]
            elif key in (*self.route.dataset_lists, *self.route.runs):
                out[key] = [value]
            else:
                out.setdefault(key, value)
        return out

    def _narrow(self, params: dict[str, Any], asked: dict[str, Any]) -> None:
        """Leave out of the query string the names ``ask`` left out of lists."""
        if all(asked.get(k) == params.get(k) for k in self.route.dataset_lists):
            return
        pairs = urllib.parse.parse_qsl(self.scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        kept = [(k, v) for k, v in pairs if k not in self.route.dataset_lists or v in _listed(asked.get(k))]
        self.scope["query_string"] = urllib.parse.urlencode(kept).encode("latin-1")

    async def _pass(self) -> int:
        status = 500

        async def send(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await self.send(message)
        await self.app(self.scope, self.receive, send)
        return status

    async def _shaped(self, st: Any, reader: Sight) -> int:
        start: Message | None = None
        body = bytearray()

        async def capture(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
        await self.app(self.scope, self.receive, capture)
        if start is None:
            return 500
        headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
        ctype = dict((k.lower(), v) for k, v in headers).get(b"content-type", b"")
        data = bytes(body)
        if ctype.startswith(b"application/json") and data:
            try:
                shaped, self.withheld = await run_in_threadpool(_show, st, reader, json.loads(data), self.template)
            except Unknown as exc:
                raise _Answer(404, exc.body["detail"]) from None
            except StoreError as exc:
                raise _Answer(503, str(exc)) from None
            if isinstance(shaped, dict) and start["status"] < 300:
                shaped["withheld"] = self.withheld
            data = json.dumps(shaped, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
        elif data and not self.route.shapes_itself and start["status"] < 400:
            log.error("lineage-listener serve: %s answered %s to a reader who may not read everything; withheld",
                      self.template, ctype.decode("latin-1") or "no content type")
            raise _Answer(500, "this answer cannot be shown to a reader who may not read everything")
        await self.send({**start, "headers": headers + [(b"content-length", str(len(data)).encode())]})
        await self.send({"type": "http.response.body", "body": data})
        return start["status"]

    def _audit(self, status: int, detail: str | None) -> None:
        _record(self.access, self.identity, self.client, self.scope["method"], self.template, self.scope["path"],
                self.datasets, status, self.withheld, detail)


def _record(access: Access, who: Identity | None, client: str, method: str, template: str, path: str,
            datasets: list[str], status: int, withheld: int, detail: str | None) -> None:
    if access.audit is None:
        return
    if detail is not None and not isinstance(detail, str):  # an answer's structured detail (a name and its near misses)
        detail = json.dumps(detail, ensure_ascii=False, sort_keys=True)
    access.audit.record(AuditRow(
        requested_at=utcnow(), identity=who.name if who else None, groups=sorted(who.groups) if who else None,
        via=who.via if who else None, client=client, method=method, route=template or None, path=path[:2000],
        datasets=datasets or None, status=status, withheld=withheld, detail=detail))


def record(access: Access, request: Request, who: Identity | None, status: int, detail: str | None) -> None:
    """An audit row for a request a route answered itself (the login's callback)."""
    headers = {k.lower(): v for k, v in request.headers.items()}
    client = access.credentials.client(request.client.host if request.client else None, headers)
    route = request.scope.get("route")
    _record(access, who, client, request.method, getattr(route, "path", ""), request.url.path, [], status, 0, detail)


class _Answer(Exception):
    """An answer the gate gives itself: ``{"detail": ...}`` with ``status``."""

    def __init__(self, status: int, detail: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(str(detail))
        self.status, self.detail, self.headers = status, detail, headers or {}

    async def send(self, send: Send) -> None:
        body = json.dumps({"detail": self.detail}, ensure_ascii=False).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [(k.encode(), v.encode()) for k, v in self.headers.items()]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _route(scope: Scope) -> tuple[str, Route, dict[str, Any]]:
    """The matching route's path template, declaration and path parameters. A path no route takes,
    or a method it does not, needs an identity (the router then answers 404 or 405)."""
    method = "GET" if scope["method"] == "HEAD" else scope["method"]
    app = scope["app"]
    routes = getattr(app.state, "flat_routes", None)
    if routes is None:
        routes = app.state.flat_routes = flat(app.router.routes)
    for r in routes:
        match, child = r.matches(scope)
        if match == Match.FULL:
            key = ("GET", r.path) if isinstance(r, Mount) else (method, r.path)
            return r.path, ROUTES.get(key, Route("identity")), child.get("path_params", {})
    return "", Route("identity"), {}


def _allowed(needs: str, rights: Rights) -> bool:
    return {"identity": True, "read": rights.reads, "write": rights.write, "admin": rights.admin}[needs]


def _listed(value: Any) -> list:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def _ask(st: Any, reader: Sight, route: Route, params: dict[str, Any]) -> dict[str, Any]:
    with st.read() as con:
        return reader.ask(con, route, params)


def _show(st: Any, reader: Sight, answer: Any, template: str) -> tuple[Any, int]:
    with st.read() as con:
        return reader.show(con, answer, template)
