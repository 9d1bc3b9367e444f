"""An OpenID Connect issuer: its discovery document, its signing keys, bearer JWTs checked against them,
and the authorization code exchange of the UI's login (docs/security.md, "OIDC").

Signatures, algorithms and claims are checked by PyJWT (``jwt``); nothing here is cryptography of its
own. The keys (JWKS) are fetched from the discovery document's ``jwks_uri``, kept, and fetched again
when a token names a key id (``kid``) they do not hold, at most once a minute: a stream of made-up key
ids never becomes a stream of requests to the issuer.
"""
from __future__ import annotations

import base64
import hashlib
import json
import logging
import secrets
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

import jwt

from lineage_listener.server.access.accessfile import Oidc, loopback_host
from lineage_listener.server.access.identity import Identity

log = logging.getLogger(__name__)

#: Signature algorithms accepted: public-key ones only (``none`` and HMAC are refused, whatever a
#: token's header says).
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA")
#: Seconds of clock difference tolerated on ``exp``, ``nbf`` and ``iat``.
LEEWAY = 30
#: The least time between two fetches of the keys when an unknown key id arrives.
REFETCH = 60.0
#: The least time between two attempts while the issuer has answered no keys yet (it is down).
RETRY = 5.0
#: The longest bearer JWT read (longer ones are refused unread).
MAX_TOKEN = 64 * 1024
#: Seconds a request to the issuer may take.
TIMEOUT = 10.0


class BadToken(ValueError):
    """A JWT that is refused; the message says why (never the token)."""


class IssuerUnreachable(RuntimeError):
    """The issuer's discovery document or keys cannot be fetched now."""


def looks_like_jwt(token: str) -> bool:
    """A compact JWS: three base64url parts.

    >>> looks_like_jwt("eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"), looks_like_jwt("a-shared-token")
    (True, False)
    """
    return token.count(".") == 2 and token.startswith("eyJ")


def _fetch_json(url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Any:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback_host(parts.hostname)):
        raise IssuerUnreachable(f"{url}: the issuer's endpoints must be https (plain http only on this machine)")
    req = urllib.request.Request(url, data=data, headers={"Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT) as resp:  # noqa: S310 - the scheme is checked above
            return json.loads(resp.read(4 * 1024 * 1024))
    except urllib.error.HTTPError as exc:
        body = exc.read(2000).decode("utf-8", "replace")
        raise IssuerUnreachable(f"{parts.scheme}://{parts.netloc}{parts.path}: HTTP {exc.code} {body[:300]}") from None
    except (OSError, ValueError) as exc:
        raise IssuerUnreachable(f"{parts.scheme}://{parts.netloc}{parts.path}: {exc}") from None


@dataclass(frozen=True)
class Login:
    """One login under way: what the callback checks (``state``) and proves (``verifier``, ``nonce``)."""

    state: str
    nonce: str
    verifier: str
    url: str          # the issuer's authorization URL to send the browser to


class Issuer:
    """One OIDC issuer, as the access file names it."""

    def __init__(self, config: Oidc) -> None:
        self.config = config
        self._lock = threading.Lock()
        self._discovery: dict[str, Any] | None = None
        self._keys: dict[str | None, tuple[Any, str | None]] = {}  # kid -> (public key, the JWK's alg)
        self._fetched = -REFETCH

    # -- the issuer's documents -------------------------------------------------------------
    def discovery(self) -> dict[str, Any]:
        with self._lock:
            if self._discovery is None:
                doc = _fetch_json(f"{self.config.issuer}/.well-known/openid-configuration")
                if str(doc.get("issuer", "")).rstrip("/") != self.config.issuer:
                    raise IssuerUnreachable(f"{self.config.issuer}: its discovery document names another "
                                            f"issuer ({doc.get('issuer')!r})")
                for key in ("jwks_uri", "authorization_endpoint", "token_endpoint"):
                    if key in doc:
                        _fetch_check(doc[key], key)
                self._discovery = doc
            return self._discovery

    def _key(self, kid: str | None) -> tuple[Any, str | None]:
        """The issuer's key ``kid`` (None: a token naming no key, taken when the issuer has one key)."""
        def find() -> tuple[Any, str | None] | None:
            with self._lock:
                if kid is None:
                    return next(iter(self._keys.values())) if len(self._keys) == 1 else None
                return self._keys.get(kid)
        key = find()
        if key is None:
            with self._lock:
                since = time.monotonic() - self._fetched
                stale = since >= REFETCH or (not self._keys and since >= RETRY)
            if stale:
                self._refresh()
                key = find()
        if key is None:
            raise BadToken("signed with a key the issuer does not publish")
        return key

    def _refresh(self) -> None:
        with self._lock:
            self._fetched = time.monotonic()
        jwks = _fetch_json(self.discovery()["jwks_uri"])
        keys: dict[str | None, tuple[Any, str | None]] = {}
        for data in jwks.get("keys", []) if isinstance(jwks, dict) else []:
            if not isinstance(data, dict) or data.get("use", "sig") != "sig" or data.get("kty") == "oct":
                continue  # encryption keys; shared secrets are never signing keys here
            try:
                key = jwt.PyJWK.from_dict(data)
            except jwt.PyJWTError:
                continue  # a key type or algorithm this PyJWT does not know: not one of ours to check
            keys[data.get("kid")] = (key.key, data.get("alg"))
        with self._lock:
            self._keys = keys
        log.info("lineage-listener serve: %d signing keys of %s", len(keys), self.config.issuer)

    # -- tokens --------------------------------------------------------------------------------
    def verify(self, token: str, audience: str | None = None, nonce: str | None = None) -> dict[str, Any]:
        """The claims of ``token`` once its signature (by a key of the issuer, a public-key algorithm),
        ``iss``, ``aud`` (``audience``, default the access file's), ``exp`` and ``nbf`` are right; else
        :class:`BadToken`."""
        if len(token) > MAX_TOKEN:
            raise BadToken("longer than any token accepted")
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise BadToken("not a JWT") from None
        alg = header.get("alg")
        if alg not in ALGORITHMS:
            raise BadToken(f"algorithm {str(alg)[:20]!r} is not accepted")
        kid = header.get("kid")
        key, key_alg = self._key(kid if isinstance(kid, str) else None)
        if key_alg is not None and key_alg != alg:
            raise BadToken("signed with another algorithm than its key's")
        try:
            claims = jwt.decode(token, key=key, algorithms=[alg], audience=audience or self.config.audience,
                                issuer=self.config.issuer, leeway=LEEWAY,
                                options={"require": ["exp", "iss", "aud"]})
        except jwt.ExpiredSignatureError:
            raise BadToken("expired") from None
        except jwt.ImmatureSignatureError:
            raise BadToken("not valid yet") from None
        except jwt.InvalidAudienceError:
            raise BadToken("for another audience") from None
        except jwt.InvalidIssuerError:
            raise BadToken("from another issuer") from None
        except jwt.PyJWTError as exc:
            raise BadToken(f"refused ({type(exc).__name__})") from None
        if nonce is not None and not secrets.compare_digest(str(claims.get("nonce", "")), nonce):
            raise BadToken("its nonce is not this login's")
        return claims

    def identity(self, claims: dict[str, Any], via: str) -> Identity:
        """The identity a token's claims name: the user claim (then ``email``, then ``sub``) and the groups
        claim (a list, or names separated by commas or spaces; a leading ``/`` of a group path is
        dropped)."""
        name = claims.get(self.config.user_claim) or claims.get("email") or claims.get("sub")
        if not isinstance(name, str) or not name:
            raise BadToken("names nobody (no user claim, email or sub)")
        raw = claims.get(self.config.groups_claim) or []
        if isinstance(raw, str):
            raw = raw.replace(",", " ").split()
        groups = frozenset(str(g).lstrip("/") for g in raw if isinstance(g, str) and g.strip("/"))
        exp = claims.get("exp")
        return Identity(name=name, groups=groups, via=via, expires=float(exp) if isinstance(exp, (int, float)) else None)

    # -- the UI's login ------------------------------------------------------------------------
    def login(self, redirect_uri: str) -> Login:
        """A new login: the authorization URL with ``state``, ``nonce`` and a PKCE challenge (S256)."""
        if not self.config.client_id:
            raise IssuerUnreachable("the access file's oidc has no client_id: the UI cannot log in")
        state, nonce, verifier = (secrets.token_urlsafe(32) for _ in range(3))
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
        query = urllib.parse.urlencode({
            "response_type": "code", "client_id": self.config.client_id, "redirect_uri": redirect_uri,
            "scope": " ".join(self.config.scopes), "state": state, "nonce": nonce,
            "code_challenge": challenge, "code_challenge_method": "S256"})
        endpoint = self.discovery()["authorization_endpoint"]
        return Login(state=state, nonce=nonce, verifier=verifier,
                     url=endpoint + ("&" if "?" in endpoint else "?") + query)

    def exchange(self, code: str, redirect_uri: str, login: Login) -> Identity:
        """The identity of a finished login: the code exchanged (with the PKCE verifier) for an ID token,
        which is checked like a bearer token, for this client and this login's nonce."""
        form = {"grant_type": "authorization_code", "code": code, "redirect_uri": redirect_uri,
                "code_verifier": login.verifier, "client_id": self.config.client_id}
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        if self.config.client_secret:
            pair = f"{urllib.parse.quote(self.config.client_id, safe='')}:" \
                   f"{urllib.parse.quote(self.config.client_secret, safe='')}"
            headers["Authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        answer = _fetch_json(self.discovery()["token_endpoint"], urllib.parse.urlencode(form).encode(), headers)
        token = answer.get("id_token") if isinstance(answer, dict) else None
        if not isinstance(token, str):
            raise BadToken("the issuer answered no ID token")
        return self.identity(self.verify(token, audience=self.config.client_id, nonce=login.nonce), "session")


def _fetch_check(url: Any, what: str) -> None:
    parts = urllib.parse.urlsplit(str(url))
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback_host(parts.hostname)):
        raise IssuerUnreachable(f"the issuer's {what} {url!r} is not https")
