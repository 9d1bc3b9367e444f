"""The UI's signed-in browsers and the logins under way (docs/security.md, "The UI").

A session is a random id (256 bits) in an ``HttpOnly``, ``SameSite=Strict`` cookie (``Secure`` over
TLS); the identity stays on the server, keyed by the id's SHA-256, and ends when its ID token expires,
at logout, or when the server restarts. A login under way is keyed by its ``state`` and bound to the
browser that started it by a second random value in a short-lived cookie sent back on the issuer's
redirect (``SameSite=Lax``: a ``Strict`` cookie is not sent on that cross-site navigation).

>>> s = Sessions()
>>> from lineage_listener.server.access.identity import Identity
>>> sid = s.open(Identity("ann", frozenset({"analysts"}), "session", expires=time.time() + 60))
>>> s.get(sid).name, s.get("forged"), s.close(sid), s.get(sid)
('ann', None, None, None)
"""
from __future__ import annotations

import hashlib
import secrets
import threading
import time
from dataclasses import dataclass

from lineage_listener.server.access.identity import Identity
from lineage_listener.server.access.oidc import Login

SESSION_COOKIE = "lineage_session"
LOGIN_COOKIE = "lineage_login"
#: Seconds a login may take from the redirect to the issuer to the callback.
LOGIN_TTL = 600
#: Longest session, whatever the ID token says.
MAX_SESSION = 12 * 3600


def _key(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


class Sessions:
    """Signed-in browsers, at most ``limit`` (the oldest go first)."""

    def __init__(self, limit: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, Identity] = {}
        self.limit = limit

    def open(self, identity: Identity) -> str:
        sid = secrets.token_urlsafe(32)
        ends = min(identity.expires or time.time() + MAX_SESSION, time.time() + MAX_SESSION)
        with self._lock:
            self._prune()
            self._by_key[_key(sid)] = Identity(identity.name, identity.groups, "session", ends)
        return sid

    def get(self, sid: str | None) -> Identity | None:
        if not sid or len(sid) > 200:
            return None
        key = _key(sid)
        with self._lock:
            identity = self._by_key.get(key)
            if identity is not None and identity.expires is not None and identity.expires <= time.time():
                del self._by_key[key]
                return None
            return identity

    def close(self, sid: str | None) -> None:
        if sid:
            with self._lock:
                self._by_key.pop(_key(sid), None)

    def _prune(self) -> None:
        now = time.time()
        for key in [k for k, i in self._by_key.items() if i.expires is not None and i.expires <= now]:
            del self._by_key[key]
        while len(self._by_key) >= self.limit:
            del self._by_key[next(iter(self._by_key))]


@dataclass(frozen=True)
class Pending:
    login: Login
    binding: str      # the SHA-256 of the login cookie's value
    next: str         # where the UI goes once signed in (a path of this server)
    started: float


class Logins:
    """Logins under way, keyed by ``state``; each is finished once, by the browser that started it."""

    def __init__(self, limit: int = 10_000) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, Pending] = {}
        self.limit = limit

    def start(self, login: Login, next_path: str) -> str:
        """The value of the login cookie binding this login to the browser."""
        binding = secrets.token_urlsafe(32)
        now = time.time()
        with self._lock:
            for state in [s for s, p in self._pending.items() if now - p.started > LOGIN_TTL]:
                del self._pending[state]
            while len(self._pending) >= self.limit:
                del self._pending[next(iter(self._pending))]
            self._pending[login.state] = Pending(login, _key(binding), next_path, now)
        return binding

    def finish(self, state: str | None, binding: str | None) -> Pending | None:
        """The login ``state`` names, when ``binding`` is its browser's and it is not too old."""
        if not state or not binding:
            return None
        with self._lock:
            pending = self._pending.pop(state, None)
        if pending is None or time.time() - pending.started > LOGIN_TTL:
            return None
        return pending if secrets.compare_digest(pending.binding, _key(binding)) else None
