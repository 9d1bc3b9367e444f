"""Token-protected writes: capture batches from remote drivers, OpenLineage events from any producer.

A batch is idempotent (a query's edges are written with its ``queries`` row, and a query
already in the store adds no edge), so a driver may resend after a lost response.
"""
from __future__ import annotations

import json
import logging

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from lineage_listener.server.state import ServerState, require_token
from lineage_listener.store.batch import Batch
from lineage_listener.store.writer import StoreWriter

router = APIRouter()
log = logging.getLogger(__name__)


def _write(st: ServerState, batch: Batch) -> JSONResponse:
    with st.lock:
        ok = StoreWriter(st.store).write(batch)
    # 202: accepted but spooled beside the store (another process holds it); written later
    return JSONResponse({"written": ok, "rows": len(batch)}, status_code=200 if ok else 202)


@router.post("/api/batches")
async def post_batch(request: Request, st: ServerState = Depends(require_token)) -> JSONResponse:
    """One capture batch: ``{"rows": {table: [[...], ...]}}`` (the spool file format)."""
    body = await request.body()
    if len(body) > st.max_body:
        raise HTTPException(413, f"body over the {st.max_body} byte limit")
    try:
        data = json.loads(body)
        batch = Batch.from_json(json.dumps(data.get("rows", data)))
    except (ValueError, AttributeError, TypeError) as exc:
        raise HTTPException(400, f"not a lineage batch: {exc}") from None
    return _write(st, batch)


@router.post("/api/v1/lineage")
async def post_openlineage(request: Request, st: ServerState = Depends(require_token)) -> JSONResponse:
    """An OpenLineage RunEvent (Marquez's endpoint), written with the reverse mapping of the export."""
    try:
        from lineage_listener.openlineage.ingest import to_batch
    except ImportError:
        raise HTTPException(501, "OpenLineage support is not installed on the server "
                                 "(pip install 'lineage-listener[openlineage]')") from None
    body = await request.body()
    if len(body) > st.max_body:
        raise HTTPException(413, f"body over the {st.max_body} byte limit")
    try:
        event = json.loads(body)
        batch, _ = to_batch(event if isinstance(event, list) else [event])
    except (ValueError, KeyError, TypeError) as exc:
        raise HTTPException(400, f"not an OpenLineage event: {exc}") from None
    return _write(st, batch)
