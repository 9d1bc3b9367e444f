"""Token-protected writes: capture batches from remote drivers, OpenLineage events from any producer.

A batch is idempotent (an edge already in the store is not written again), so a driver
may resend after a lost response, and an OpenLineage run's events may come one by one.
"""
from __future__ import annotations

import asyncio
import json
import logging
import zlib

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import JSONResponse

from lineage_listener.server.state import ServerState, require_token
from lineage_listener.store.group_writer import Answer, QueueFull
from lineage_listener.store.batch import Batch

router = APIRouter()
log = logging.getLogger(__name__)

#: Seconds between checks that a client waiting for its batch is still there.
CHECK_CLIENT = 1.0


def _busy(detail: str, retry_after: int) -> HTTPException:
    return HTTPException(503, detail, headers={"Retry-After": str(retry_after)})


def _check_room(st: ServerState) -> None:
    """503 before the body is read when the queue is full: a full queue takes no more memory."""
    wait = st.writer.full()
    if wait:
        raise _busy(f"the server's write queue is full; retry in {wait} s", wait)


async def _write(request: Request, st: ServerState, batch: Batch) -> JSONResponse:
    """``rows``: rows received; ``new_edges``: edges the store did not hold yet (null when spooled).
    202: accepted but spooled beside the store (another process holds it); written later.
    A batch whose client hangs up while it waits in the queue is withdrawn (the client resends)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Answer] = loop.create_future()

    def answer(result: Answer) -> None:  # from the writer thread
        loop.call_soon_threadsafe(lambda: done.done() or done.set_result(result))
    try:
        item = st.writer.submit(batch, answer)
    except QueueFull as exc:
        raise _busy(str(exc), exc.retry_after) from None
    while True:
        try:
            status, body = await asyncio.wait_for(asyncio.shield(done), timeout=CHECK_CLIENT)
            break
        except asyncio.TimeoutError:
            if await request.is_disconnected() and st.writer.withdraw(item):
                return JSONResponse({"detail": "the client went away; the batch was not written"}, 499)
    if status >= 400:
        raise HTTPException(status, body["detail"])
    return JSONResponse(body, status_code=status)


async def _parse(body: bytes, parse, what: str) -> Batch:  # noqa: ANN001 - body -> Batch
    """``parse(body)`` on a worker thread (big batches must not stall the event loop); 400 when it fails."""
    try:
        return await run_in_threadpool(parse, body)
    except (ValueError, KeyError, AttributeError, TypeError) as exc:
        raise HTTPException(400, f"not {what}: {exc}") from None


def _capture_batch(body: bytes) -> Batch:
    data = json.loads(body)
    return Batch.from_json(json.dumps(data.get("rows", data)))


def _openlineage_batch(body: bytes) -> Batch:
    from lineage_listener.openlineage.ingest import to_batch

    event = json.loads(body)
    return to_batch(event if isinstance(event, list) else [event])[0]


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
    _check_room(st)
    batch = await _parse(await _body(request, st), _capture_batch, "a lineage batch")
    return await _write(request, st, batch)


@router.post("/api/v1/lineage")
async def post_openlineage(request: Request, st: ServerState = Depends(require_token)) -> JSONResponse:
    """An OpenLineage RunEvent (Marquez's endpoint), written with the reverse mapping of the export."""
    try:
        from lineage_listener.openlineage import ingest  # noqa: F401 - only: is it installed
    except ImportError:
        raise HTTPException(501, "OpenLineage support is not installed on the server "
                                 "(pip install 'lineage-listener[openlineage]')") from None
    _check_room(st)
    batch = await _parse(await _body(request, st), _openlineage_batch, "an OpenLineage event")
    return await _write(request, st, batch)
