"""``GET /api/audit`` (admins): the server's audit and the label changes, newest first
(:mod:`lineage_listener.govern.audit`; the same answer as ``lineage-listener audit --format json``)."""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from lineage_listener.govern.audit import records
from lineage_listener.server.state import ServerState, state
from lineage_listener.timewindow import parse_time

router = APIRouter()


@router.get("/api/audit")
def audit(request: Request, since: str | None = None, user: str | None = None,
          limit: int = Query(1000, ge=1, le=100_000), st: ServerState = Depends(state)) -> dict[str, Any]:
    """Who asked what or was refused (``kind`` ``request``: identity, groups, route, the datasets it named,
    status, ``withheld``), and who changed which label (``kind`` ``label``), newest first; ``since`` (a time
    or an age), ``user``. Admins only; a server without ``--access`` keeps no audit (403)."""
    if getattr(request.app.state, "access", None) is None:
        raise HTTPException(403, "this server keeps no audit: it was started without --access")
    try:
        start = parse_time(since) if since else None
    except ValueError as exc:
        raise HTTPException(400, f"bad time {since!r}: {exc}") from None
    with st.read() as con:
        return {"since": start, "user": user, "records": records(con, start, user, limit)}
