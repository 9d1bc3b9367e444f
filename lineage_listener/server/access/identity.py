"""Who a request is, and what the grants of the access file let them do (docs/security.md).

>>> from lineage_listener.server.access.accessfile import Grant
>>> grants = (Grant(frozenset({"analysts"}), read=("spark_catalog.marts.*",)),
...           Grant(frozenset({"privacy"}), read=("**",), admin=True))
>>> r = rights_of(grants, Identity("ann", frozenset({"analysts", "staff"}), "token"))
>>> r.read, r.write, r.admin, r.everything
(('spark_catalog.marts.*',), False, False, False)
>>> rights_of(grants, Identity("pia", frozenset({"privacy"}), "oidc")).everything
True
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lineage_listener.server.access.accessfile import Grant

#: How an identity was established (the audit's ``via``).
VIA = ("token", "oidc", "session", "proxy", "writer")


@dataclass(frozen=True)
class Identity:
    """A person or service: ``name``, ``groups`` and how it was known (:data:`VIA`). ``expires``: when
    the credential stops being valid (seconds since the epoch; None: it does not)."""

    name: str
    groups: frozenset[str]
    via: str
    expires: float | None = None


@dataclass(frozen=True)
class Rights:
    """The union of the grants an identity's groups hold."""

    read: tuple[str, ...] = ()
    write: bool = False
    admin: bool = False

    @property
    def everything(self) -> bool:
        """Reads every dataset: an admin, or a ``**`` reader."""
        return self.admin or "**" in self.read

    @property
    def reads(self) -> bool:
        return self.admin or bool(self.read)


#: The rights of the writer token of ``serve --token-env`` (kept for deployments that have it).
WRITER = Rights(write=True)


def rights_of(grants: Iterable[Grant], identity: Identity) -> Rights:
    """What ``identity`` may do under ``grants``."""
    if identity.via == "writer":
        return WRITER
    read: list[str] = []
    write = admin = False
    for g in grants:
        if g.groups & identity.groups:
            read += [glob for glob in g.read if glob not in read]
            write, admin = write or g.write, admin or g.admin
    return Rights(read=tuple(read), write=write, admin=admin)
