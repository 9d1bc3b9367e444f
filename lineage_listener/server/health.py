"""``GET /api/health``: the server's store writer and, when it consumes one, its Kafka topic.

``kafka`` is null unless the server consumes a topic (``serve --kafka-bootstrap``): then its state
(``active``, ``standby`` while another process consumes into the store, ``failed``), per-partition
last offset, committed offset, high watermark and lag, counts since start and recent rates.
"""
from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request

from lineage_listener.server.state import ServerState, state

router = APIRouter()


@router.get("/api/health")
def health(request: Request, st: ServerState = Depends(state)) -> dict[str, Any]:
    """Is the server writing, what waits, and how far behind its Kafka topic it is."""
    ingest = getattr(request.app.state, "kafka", None)
    kafka = ingest.stats() if ingest is not None else None
    ok = kafka is None or kafka["state"] in ("active", "standby", "starting")
    return {"ok": ok, "store": str(st.store), "writer": st.writer.stats(), "kafka": kafka}
