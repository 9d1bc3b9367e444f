"""What every route shares: the store path, the token, and one lock so reads and writes take turns.

DuckDB refuses a read-only and a read-write connection to one file in one process at
the same time; requests run on a thread pool, so the server serialises store access.
"""
from __future__ import annotations

import hmac
import threading
from dataclasses import dataclass, field
from pathlib import Path

from fastapi import HTTPException, Request


@dataclass
class ServerState:
    store: Path
    token: str | None = None
    max_body: int = 50 * 1024 * 1024
    lock: threading.RLock = field(default_factory=threading.RLock)


def state(request: Request) -> ServerState:
    return request.app.state.lineage


def require_token(request: Request) -> ServerState:
    """Writes need ``Authorization: Bearer <token>``; a server started without one accepts none."""
    st = state(request)
    if not st.token:
        raise HTTPException(403, "this server was started without a token (the environment variable "
                                 "LINEAGE_SERVER_TOKEN, or the one serve --token-env names): writes are disabled")
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {st.token}".encode()):
        raise HTTPException(401, "missing or wrong bearer token")
    length = int(request.headers.get("content-length") or 0)
    if length > st.max_body:
        raise HTTPException(413, f"body of {length} bytes is over the {st.max_body} byte limit")
    return st
