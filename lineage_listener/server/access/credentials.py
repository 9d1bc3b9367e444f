"""Who a request is: a trusted proxy's headers, a bearer token (a shared token, the writer token of
``--token-env`` or an issuer's JWT), or the UI's session cookie (docs/security.md, "Identities").

Shared tokens are compared in constant time (their SHA-256 digests, every token each time); no secret
is ever logged, echoed or stored: a refusal says what kind of credential failed, never its value.
"""
from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from dataclasses import dataclass, field

from lineage_listener.server.access.accessfile import AccessFile
from lineage_listener.server.access.identity import Identity
from lineage_listener.server.access.oidc import MAX_TOKEN, BadToken, Issuer, IssuerUnreachable, looks_like_jwt
from lineage_listener.server.access.sessions import SESSION_COOKIE, Sessions


class Refused(Exception):
    """Credentials that were given and are wrong: answered ``status`` (401) with ``detail``."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(detail)
        self.status, self.detail = status, detail


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8", "surrogateescape")).digest()


@dataclass
class Credentials:
    """The ways a request can be someone, from the access file (and the writer token, when given)."""

    file: AccessFile
    issuer: Issuer | None = None
    writer_token: str | None = field(default=None, repr=False)
    writer_name: str = "api-token"
    sessions: Sessions = field(default_factory=Sessions)

    def __post_init__(self) -> None:
        self._tokens = [(_digest(t.secret), t) for t in self.file.tokens]
        self._writer = _digest(self.writer_token) if self.writer_token else None

    def client(self, peer: str | None, headers: Mapping[str, str]) -> str:
        """The client's address: the peer's, or the last hop a trusted proxy names in ``X-Forwarded-For``."""
        proxy = self.file.proxy
        forwarded = headers.get("x-forwarded-for")
        if proxy is not None and forwarded and proxy.trusts(peer):
            return forwarded.split(",")[-1].strip()[:64] or (peer or "")
        return peer or ""

    def identify(self, peer: str | None, headers: Mapping[str, str], cookies: Mapping[str, str]) -> Identity | None:
        """The request's identity; None when it gives none; :class:`Refused` when what it gives is wrong.

        ``headers``: lower-case names."""
        proxy = self.file.proxy
        if proxy is not None and proxy.trusts(peer):
            user = headers.get(proxy.user_header.lower(), "").strip()
            if user:
                raw = headers.get(proxy.groups_header.lower(), "") if proxy.groups_header else ""
                groups = frozenset(g.strip() for g in raw.split(",") if g.strip())
                return Identity(name=user[:256], groups=groups, via="proxy")
        authorization = headers.get("authorization")
        if authorization is not None:
            return self._bearer(authorization)
        return self.sessions.get(cookies.get(SESSION_COOKIE))

    def _bearer(self, authorization: str) -> Identity:
        if len(authorization) > MAX_TOKEN + 16:
            raise Refused(401, "the Authorization header is longer than any token accepted")
        scheme, _, value = authorization.strip().partition(" ")
        value = value.strip()
        if scheme.lower() != "bearer" or not value:
            raise Refused(401, "Authorization must be 'Bearer <token>'")
        digest = _digest(value)
        found = None
        for known, token in self._tokens:  # every token, every time: the time taken names none of them
            if hmac.compare_digest(known, digest):
                found = token
        if found is not None:
            return Identity(name=found.name, groups=found.groups, via="token")
        if self._writer is not None and hmac.compare_digest(self._writer, digest):
            return Identity(name=self.writer_name, groups=frozenset(), via="writer")
        if self.issuer is not None and looks_like_jwt(value):
            try:
                return self.issuer.identity(self.issuer.verify(value), "oidc")
            except BadToken as exc:
                raise Refused(401, f"bearer JWT refused: {exc}") from None
            except IssuerUnreachable as exc:
                raise Refused(503, f"the identity provider cannot be reached to check the token: {exc}") from None
        raise Refused(401, "unknown bearer token")

    def owns(self, value: str) -> bool:
        """Whether ``value`` is one of the shared tokens (or the writer token): a token put where it
        does not belong (a query string) is refused without saying whose it is."""
        digest = _digest(value)
        found = False
        for known, _ in self._tokens:
            found |= hmac.compare_digest(known, digest)
        if self._writer is not None:
            found |= hmac.compare_digest(self._writer, digest)
        return found
