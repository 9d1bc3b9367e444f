"""What every route shares: the store path, the token, and the store's one writer, whose open
database also serves the reads (:mod:`lineage_listener.store.group_writer`).

DuckDB refuses a read-only and a read-write connection to one file in one process at
the same time: every read goes through :meth:`ServerState.read`, never its own connection.
"""
from __future__ import annotations

import hmac
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
from fastapi import HTTPException, Request

from lineage_listener.query.store import LineageStore
from lineage_listener.store.group_writer import GroupWriter, Settings


@dataclass
class ServerState:
    store: Path
    token: str | None = None
    max_body: int = 50 * 1024 * 1024
    settings: Settings = field(default_factory=Settings)
    writer: GroupWriter = field(init=False)

    def __post_init__(self) -> None:
        self.writer = GroupWriter(self.store, self.settings)

    def read(self):  # noqa: ANN201 - a context manager of a connection
        """``with st.read() as con``: a connection for one read (see ``GroupWriter.reading``)."""
        return self.writer.reading()

    def lineage_store(self) -> "ServerStore":
        return ServerStore(self)


class ServerStore(LineageStore):
    """The query layer's store, its connections taken from the server's writer (never a connection of
    its own beside the writer's)."""

    def __init__(self, st: ServerState) -> None:
        self._state = st
        super().__init__(st.store)

    @contextmanager
    def connect(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with self._state.read() as con:
            yield con


def state(request: Request) -> ServerState:
    return request.app.state.lineage


def require_token(request: Request) -> ServerState:
    """Writes need ``Authorization: Bearer <token>``; a server started without one accepts none. With
    ``serve --access`` the gate has checked the identity's grant already
    (:mod:`lineage_listener.server.access.gate`)."""
    st = state(request)
    if getattr(request.app.state, "access", None) is not None:
        _bounded(request, st)
        return st
    if not st.token:
        raise HTTPException(403, "this server was started without a token (the environment variable "
                                 "LINEAGE_SERVER_TOKEN, or the one serve --token-env names): writes are disabled")
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {st.token}".encode()):
        raise HTTPException(401, "missing or wrong bearer token")
    _bounded(request, st)
    return st


def _bounded(request: Request, st: ServerState) -> None:
    length = int(request.headers.get("content-length") or 0)
    if length > st.max_body:
        raise HTTPException(413, f"body of {length} bytes is over the {st.max_body} byte limit")
