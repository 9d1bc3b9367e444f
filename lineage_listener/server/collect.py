"""Token-protected writes: capture batches from remote drivers, OpenLineage events from any producer.

A batch is idempotent (an edge already in the store is not written again), so a driver
may resend after a lost response, and an OpenLineage run's events may come one by one.
"""
from __future__ import annotations

import json
import logging
import zlib

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import JSONResponse

from lineage_listener.server.state import ServerState, require_token
from lineage_listener.store.batch import Batch
from lineage_listener.store.writer import StoreWriter

router = APIRouter()
log = logging.getLogger(__name__)


def _write(st: ServerState, batch: Batch) -> JSONResponse:
    """``rows``: rows received; ``new_edges``: edges the store did not hold yet (null when spooled)."""
    with st.lock:
        writer = StoreWriter(st.store)
        ok = writer.write(batch)
    # 202: accepted but spooled beside the store (another process holds it); written later
    return JSONResponse({"written": ok, "rows": len(batch), "new_edges": writer.new_edges if ok else None},
                        status_code=200 if ok else 202)


async def _body(request: Request, st: ServerState) -> bytes:
    """The body, gunzipped as it arrives when sent with ``Content-Encoding: gzip`` (the OpenLineage
    HTTP transport's ``compression: gzip``); 413 once it is over ``max_body``, counted decompressed."""
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", "x-gzip"):
        raise HTTPException(415, f"Content-Encoding {encoding!r} is not supported (send gzip or nothing)")
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding != "identity" else None
    limit, out = st.max_body, bytearray()
    try:
        async for chunk in request.stream():
            while chunk:
                if inflater is None:
                    out += chunk
                    chunk = b""
                else:  # 1 MiB at a time, never past the limit (plus one byte, to know it is over)
                    out += inflater.decompress(chunk, min(1 << 20, limit + 1 - len(out)))
                    chunk = inflater.unconsumed_tail
                if len(out) > limit:
                    raise HTTPException(413, f"body over the {limit} byte limit"
                                             + (" once decompressed" if inflater else ""))
        if inflater is not None:
            out += inflater.flush()
            if len(out) > limit:
                raise HTTPException(413, f"body over the {limit} byte limit once decompressed")
            if not inflater.eof:
                raise HTTPException(400, "gzip body ends early")
    except zlib.error as exc:
        raise HTTPException(400, f"body is not valid gzip: {exc}") from None
    return bytes(out)


@router.post("/api/batches")
async def post_batch(request: Request, st: ServerState = Depends(require_token)) -> JSONResponse:
    """One capture batch: ``{"rows": {table: [[...], ...]}}`` (the spool file format)."""
    body = await _body(request, st)
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
    body = await _body(request, st)
    try:
        event = json.loads(body)
        batch, _ = to_batch(event if isinstance(event, list) else [event])
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HTTPException(400, f"not an OpenLineage event: {exc}") from None
    return _write(st, batch)
