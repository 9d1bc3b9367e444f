"""The access file of ``serve --access FILE`` (YAML; docs/security.md)::

    tokens:                       # the secret lives in the environment, never in this file
      - {name: ci,  env: LINEAGE_TOKEN_CI,  groups: [writers]}
      - {name: ann, env: LINEAGE_TOKEN_ANN, groups: [analysts]}
    oidc:                         # bearer JWTs from an identity provider, and the UI's login
      issuer: https://idp.example.com/realms/data
      audience: lineage
      groups_claim: groups
      client_id: lineage-ui
      client_secret_env: LINEAGE_OIDC_SECRET
    proxy:                        # an authenticating reverse proxy in front
      trusted: [10.0.0.5/32]
      user_header: X-Forwarded-User
      groups_header: X-Forwarded-Groups
    grants:
      - {groups: [writers], write: true}
      - {groups: [analysts], read: ["file:/**/marts/**", "spark_catalog.marts.*"]}
      - {groups: [privacy], read: ["**"], admin: true}

It is read whole and checked before the server starts, like a policy file: malformed YAML, an unknown
key, a group that no grant names, a missing or empty environment variable, a bad glob, an issuer over
plain HTTP that is not on this machine: :class:`AccessError`, one line naming the problem.

>>> import os; os.environ["DOC_TOKEN"] = "a-doctest-token-0123456789"
>>> a = parse({"tokens": [{"name": "ann", "env": "DOC_TOKEN", "groups": ["analysts"]}],
...            "grants": [{"groups": ["analysts"], "read": ["spark_catalog.marts.*"]}]}, "access.yml")
>>> a.tokens[0].name, a.grants[0].read
('ann', ('spark_catalog.marts.*',))
>>> parse({"tokens": [{"name": "ann", "env": "DOC_TOKEN", "groups": ["anlysts"]}],
...        "grants": [{"groups": ["analysts"], "read": ["**"]}]}, "access.yml")
Traceback (most recent call last):
...
lineage_listener.server.access.accessfile.AccessError: access.yml: token 'ann': group 'anlysts' is named by no grant (grants name: analysts)
"""
from __future__ import annotations

import ipaddress
import os
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineage_listener.govern.labelfile import ClassificationsError, read_yaml
from lineage_listener.govern.patterns import PatternError, glob_regex

#: The least length of a token's secret: shorter ones are guessed.
MIN_SECRET = 16

TOP_KEYS = frozenset({"tokens", "oidc", "proxy", "grants", "cors"})
TOKEN_KEYS = frozenset({"name", "env", "groups"})
OIDC_KEYS = frozenset({"issuer", "audience", "groups_claim", "user_claim", "client_id", "client_secret_env",
                       "scopes"})
PROXY_KEYS = frozenset({"trusted", "user_header", "groups_header"})
GRANT_KEYS = frozenset({"groups", "read", "write", "admin"})
CORS_KEYS = frozenset({"origins"})


class AccessError(ValueError):
    """An access file that cannot be used; one line naming the problem."""


@dataclass(frozen=True)
class Token:
    """A person or service holding a shared secret (``Authorization: Bearer <secret>``)."""

    name: str
    env: str
    groups: frozenset[str]
    secret: str = field(repr=False)


@dataclass(frozen=True)
class Oidc:
    """Bearer JWTs of an OpenID Connect issuer, and the UI's login against it."""

    issuer: str
    audience: str
    groups_claim: str = "groups"
    user_claim: str = "preferred_username"   # falls back to ``email``, then ``sub``
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    scopes: tuple[str, ...] = ("openid", "profile", "email")


@dataclass(frozen=True)
class Proxy:
    """An authenticating reverse proxy: its headers are believed from ``trusted`` peers only."""

    trusted: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
    user_header: str = "X-Forwarded-User"
    groups_header: str | None = "X-Forwarded-Groups"

    def trusts(self, host: str | None) -> bool:
        try:
            address = ipaddress.ip_address(host or "")
        except ValueError:
            return False
        return any(address in net for net in self.trusted)


@dataclass(frozen=True)
class Grant:
    """What members of ``groups`` may do: ``read`` dataset globs, ``write`` batches and events,
    ``admin`` (labels, the audit, and every dataset)."""

    groups: frozenset[str]
    read: tuple[str, ...] = ()
    write: bool = False
    admin: bool = False


@dataclass(frozen=True)
class AccessFile:
    origin: str
    tokens: tuple[Token, ...] = ()
    oidc: Oidc | None = None
    proxy: Proxy | None = None
    grants: tuple[Grant, ...] = ()
    cors: tuple[str, ...] = ()


def load(path: str | Path, environ: Mapping[str, str] | None = None) -> AccessFile:
    """Read and check the access file at ``path``; secrets are read from ``environ`` (the process's)."""
    try:
        data = read_yaml(path, "access file")
    except ClassificationsError as exc:
        raise AccessError(str(exc)) from None
    return parse(data, str(path), os.environ if environ is None else environ)


def parse(data: dict, origin: str, environ: Mapping[str, str] | None = None) -> AccessFile:
    """An :class:`AccessFile` from the file's mapping, or :class:`AccessError`."""
    env = os.environ if environ is None else environ
    _keys(data, TOP_KEYS, origin, "the file")
    grants = tuple(_grant(g, i, origin) for i, g in enumerate(_list(data.get("grants"), origin, "grants")))
    if not grants:
        raise AccessError(f"{origin}: no grants: nobody could read or write anything")
    named = frozenset().union(*(g.groups for g in grants))
    tokens = tuple(_token(t, i, origin, env, named) for i, t in enumerate(_list(data.get("tokens"), origin, "tokens")))
    _unique(tokens, origin)
    oidc = _oidc(data["oidc"], origin, env) if data.get("oidc") is not None else None
    proxy = _proxy(data["proxy"], origin) if data.get("proxy") is not None else None
    if not (tokens or oidc or proxy):
        raise AccessError(f"{origin}: no identities: give tokens, oidc or proxy")
    cors: tuple[str, ...] = ()
    if data.get("cors") is not None:
        _keys(data["cors"], CORS_KEYS, origin, "cors")
        cors = tuple(_origin_url(o, origin) for o in _strings(data["cors"].get("origins"), origin, "cors: origins"))
    return AccessFile(origin=origin, tokens=tokens, oidc=oidc, proxy=proxy, grants=grants, cors=cors)


def _keys(value: Any, allowed: frozenset[str], origin: str, where: str) -> None:
    if not isinstance(value, dict):
        raise AccessError(f"{origin}: {where}: expected a mapping, got {type(value).__name__}")
    unknown = sorted(set(map(str, value)) - allowed)
    if unknown:
        raise AccessError(f"{origin}: {where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(allowed))})")


def _list(value: Any, origin: str, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise AccessError(f"{origin}: {where}: expected a list, got {type(value).__name__}")
    return value


def _strings(value: Any, origin: str, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    items = _list(value, origin, where)
    if not all(isinstance(v, str) and v.strip() for v in items):
        raise AccessError(f"{origin}: {where}: expected a list of names")
    return tuple(v.strip() for v in items)


def _text(entry: dict, key: str, origin: str, where: str, required: bool = True) -> str | None:
    value = entry.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise AccessError(f"{origin}: {where}: {key!r} must be a non-empty string")
    return value.strip()


def _secret(env: Mapping[str, str], name: str, origin: str, where: str) -> str:
    value = env.get(name)
    if value is None:
        raise AccessError(f"{origin}: {where}: the environment variable {name} is not set")
    if not value.strip():
        raise AccessError(f"{origin}: {where}: the environment variable {name} is empty")
    return value.strip()


def _grant(entry: Any, i: int, origin: str) -> Grant:
    where = f"grants[{i}]"
    _keys(entry, GRANT_KEYS, origin, where)
    groups = frozenset(_strings(entry.get("groups"), origin, f"{where}: groups"))
    if not groups:
        raise AccessError(f"{origin}: {where}: names no groups")
    read = _strings(entry.get("read"), origin, f"{where}: read")
    for glob in read:
        try:
            glob_regex(glob)
        except PatternError as exc:
            raise AccessError(f"{origin}: {where}: {exc}") from None
    flags = {}
    for key in ("write", "admin"):
        value = entry.get(key, False)
        if not isinstance(value, bool):
            raise AccessError(f"{origin}: {where}: {key!r} must be true or false")
        flags[key] = value
    if not (read or flags["write"] or flags["admin"]):
        raise AccessError(f"{origin}: {where}: grants nothing (give read, write or admin)")
    return Grant(groups=groups, read=read, **flags)


def _token(entry: Any, i: int, origin: str, env: Mapping[str, str], named: frozenset[str]) -> Token:
    _keys(entry, TOKEN_KEYS, origin, f"tokens[{i}]")
    name = _text(entry, "name", origin, f"tokens[{i}]")
    where = f"token {name!r}"
    var = _text(entry, "env", origin, where)
    groups = frozenset(_strings(entry.get("groups"), origin, f"{where}: groups"))
    if not groups:
        raise AccessError(f"{origin}: {where}: names no groups")
    for group in sorted(groups):
        if group not in named:
            raise AccessError(f"{origin}: {where}: group {group!r} is named by no grant "
                              f"(grants name: {', '.join(sorted(named))})")
    secret = _secret(env, var, origin, where)
    if len(secret) < MIN_SECRET:
        raise AccessError(f"{origin}: {where}: the secret in {var} is shorter than {MIN_SECRET} characters")
    return Token(name=name, env=var, groups=groups, secret=secret)


def _unique(tokens: tuple[Token, ...], origin: str) -> None:
    names: set[str] = set()
    secrets_: dict[str, str] = {}
    for t in tokens:
        if t.name in names:
            raise AccessError(f"{origin}: two tokens are named {t.name!r}")
        names.add(t.name)
        if t.secret in secrets_:
            raise AccessError(f"{origin}: tokens {secrets_[t.secret]!r} and {t.name!r} have the same secret")
        secrets_[t.secret] = t.name


def loopback_host(host: str | None) -> bool:
    """Whether ``host`` (a name or an address) is this machine.

    >>> loopback_host("127.0.0.1"), loopback_host("localhost"), loopback_host("idp.example.com")
    (True, True, False)
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def _oidc(entry: Any, origin: str, env: Mapping[str, str]) -> Oidc:
    _keys(entry, OIDC_KEYS, origin, "oidc")
    issuer = _text(entry, "issuer", origin, "oidc").rstrip("/")
    url = urllib.parse.urlsplit(issuer)
    if url.scheme not in ("https", "http") or not url.hostname:
        raise AccessError(f"{origin}: oidc: issuer {issuer!r} is not an http(s) URL")
    if url.scheme == "http" and not loopback_host(url.hostname):
        raise AccessError(f"{origin}: oidc: issuer {issuer!r} is plain HTTP and not on this machine: use https")
    secret = None
    if entry.get("client_secret_env") is not None:
        secret = _secret(env, _text(entry, "client_secret_env", origin, "oidc"), origin, "oidc: client_secret_env")
    scopes = _strings(entry.get("scopes"), origin, "oidc: scopes") if entry.get("scopes") is not None else None
    if scopes is not None and "openid" not in scopes:
        raise AccessError(f"{origin}: oidc: scopes must include openid")
    return Oidc(issuer=issuer, audience=_text(entry, "audience", origin, "oidc"),
                groups_claim=_text(entry, "groups_claim", origin, "oidc", required=False) or "groups",
                user_claim=_text(entry, "user_claim", origin, "oidc", required=False) or "preferred_username",
                client_id=_text(entry, "client_id", origin, "oidc", required=False), client_secret=secret,
                **({"scopes": scopes} if scopes is not None else {}))


def _proxy(entry: Any, origin: str) -> Proxy:
    _keys(entry, PROXY_KEYS, origin, "proxy")
    nets = []
    for text in _strings(entry.get("trusted"), origin, "proxy: trusted"):
        try:
            nets.append(ipaddress.ip_network(text, strict=False))
        except ValueError:
            raise AccessError(f"{origin}: proxy: trusted: {text!r} is not an address or network") from None
    if not nets:
        raise AccessError(f"{origin}: proxy: trusted names no peer (headers would be believed from nobody)")
    return Proxy(trusted=tuple(nets),
                 user_header=_text(entry, "user_header", origin, "proxy", required=False) or "X-Forwarded-User",
                 groups_header=_text(entry, "groups_header", origin, "proxy", required=False) or "X-Forwarded-Groups")


def _origin_url(text: str, origin: str) -> str:
    url = urllib.parse.urlsplit(text)
    if url.scheme not in ("http", "https") or not url.netloc or url.path not in ("", "/"):
        raise AccessError(f"{origin}: cors: {text!r} is not an origin (scheme://host[:port])")
    return f"{url.scheme}://{url.netloc}"
