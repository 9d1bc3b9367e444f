"""The UI's login and who is signed in (docs/security.md, "The UI").

``GET /auth/config``: how this server is logged in to (``oidc``, ``token``, ``proxy`` or nothing);
``GET /auth/login``: to the issuer (authorization code flow with PKCE); ``GET /auth/callback``: back
from it, the session cookie set; ``POST /auth/logout``; ``GET /auth/me``: the signed-in identity and
its grants.
"""
from __future__ import annotations

import html
import logging
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from lineage_listener.server.access.gate import Access, identity, record
from lineage_listener.server.access.identity import Identity
from lineage_listener.server.access.oidc import BadToken, IssuerUnreachable
from lineage_listener.server.access.sessions import LOGIN_COOKIE, LOGIN_TTL, SESSION_COOKIE

router = APIRouter(tags=["login"])
log = logging.getLogger(__name__)

CALLBACK = "/auth/callback"


def _access(request: Request) -> Access | None:
    return getattr(request.app.state, "access", None)


def _secure(request: Request) -> bool:
    return request.url.scheme == "https"


def _callback_url(request: Request) -> str:
    return str(request.base_url).rstrip("/") + CALLBACK


def _next(value: str | None) -> str:
    """Where to go once signed in: a path of this server only (never another site)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return "/"
    return value


@router.get("/auth/config")
def config(request: Request) -> dict[str, Any]:
    """How to sign in to this server: ``access`` (false: reads are open), ``login`` (``oidc``: go to
    ``/auth/login``; ``token``: send a bearer token; ``proxy``: the proxy in front signs in)."""
    access = _access(request)
    if access is None:
        return {"access": False, "login": None}
    file = access.credentials.file
    login = "oidc" if access.issuer is not None and file.oidc and file.oidc.client_id else (
        "token" if file.tokens or file.oidc else "proxy")
    return {"access": True, "login": login}


@router.get("/auth/me")
def me(request: Request) -> dict[str, Any]:
    """Who is signed in, with what grants; ``expires``: when the session or token ends (epoch seconds)."""
    who = identity(request)
    access = _access(request)
    if who is None or access is None:
        return {"name": None, "access": access is not None}
    rights = access.rights(who)
    return {"name": who.name, "groups": sorted(who.groups), "via": who.via, "expires": who.expires,
            "read": list(rights.read), "write": rights.write, "admin": rights.admin, "access": True}


def _page(status: int, message: str) -> HTMLResponse:
    body = (f"<!doctype html><meta charset=utf-8><title>lineage-listener: sign-in</title>"
            f"<p>{html.escape(message)}</p><p><a href=\"/\">back to the lineage</a></p>")
    return HTMLResponse(body, status_code=status)


@router.get("/auth/login", include_in_schema=False)
def login(request: Request, next: str | None = None) -> Response:  # noqa: A002 - the parameter's name
    """To the issuer's login page; back at ``/auth/callback``."""
    access = _access(request)
    if access is None or access.issuer is None:
        return _page(404, "this server has no login: it is not behind an OpenID Connect issuer")
    try:
        pending = access.issuer.login(_callback_url(request))
    except IssuerUnreachable as exc:
        log.warning("lineage-listener serve: login: %s", exc)
        return _page(503, "the identity provider cannot be reached; try again later")
    binding = access.logins.start(pending, _next(next))
    out = RedirectResponse(pending.url, status_code=303)
    out.set_cookie(LOGIN_COOKIE, binding, max_age=LOGIN_TTL, path=CALLBACK, httponly=True,
                   secure=_secure(request), samesite="lax")
    return out


@router.get(CALLBACK, include_in_schema=False)
def callback(request: Request, code: str | None = None, state: str | None = None,
             error: str | None = None) -> Response:
    """Back from the issuer: the code exchanged, the session cookie set, on to the page asked for."""
    access = _access(request)
    if access is None or access.issuer is None:
        return _page(404, "this server has no login")
    pending = access.logins.finish(state, request.cookies.get(LOGIN_COOKIE))
    refused = None
    if error:
        refused = f"the identity provider refused the login ({error[:100]})"
    elif pending is None or not code:
        refused = "this login is unknown, too old, or was started in another browser: sign in again"
    else:
        try:
            who = access.issuer.exchange(code, _callback_url(request), pending.login)
        except BadToken as exc:
            refused = f"the identity provider's answer was refused: {exc}"
        except IssuerUnreachable as exc:
            log.warning("lineage-listener serve: login: %s", exc)
            refused = "the identity provider cannot be reached; try again later"
    if refused is not None:
        _refused(request, access, refused)
        out = _page(401, refused)
        out.delete_cookie(LOGIN_COOKIE, path=CALLBACK)
        return out
    out = RedirectResponse(pending.next, status_code=303)
    sid = access.credentials.sessions.open(who)
    out.set_cookie(SESSION_COOKIE, sid, path="/", httponly=True, secure=_secure(request), samesite="strict")
    out.delete_cookie(LOGIN_COOKIE, path=CALLBACK)
    _signed_in(request, access, who)
    return out


@router.post("/auth/logout", include_in_schema=False)
def logout(request: Request) -> JSONResponse:
    """End this browser's session."""
    access = _access(request)
    if access is not None:
        access.credentials.sessions.close(request.cookies.get(SESSION_COOKIE))
    out = JSONResponse({"signed_out": True})
    out.delete_cookie(SESSION_COOKIE, path="/", httponly=True, secure=_secure(request), samesite="strict")
    return out


def _refused(request: Request, access: Access, detail: str) -> None:
    client = access.credentials.client(request.client.host if request.client else None,
                                       {k.lower(): v for k, v in request.headers.items()})
    access.failures.failed(client)
    record(access, request, None, 401, detail)


def _signed_in(request: Request, access: Access, who: Identity) -> None:
    record(access, request, who, 303, "signed in")
