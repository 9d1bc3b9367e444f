"""Labels and policy violations over REST, and the server's policy watch (``serve --policy``).

Reads: ``GET /api/labels`` (labels of the store, a dataset or a column; declared and
propagated, masked copies and influence), ``GET /api/labels/history`` (who changed what),
``GET /api/violations`` (what the policy watch found, and its webhook's state).
Writes (the server's token, as ``/api/batches``): ``POST /api/labels`` and
``DELETE /api/labels`` (``{"dataset", "column", "label", "value"}``), recorded as set by the
token's name. They go through the store's one writer like any batch.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from lineage_listener.govern import answers, declare, labelstore
from lineage_listener.govern.policy import Policy
from lineage_listener.govern.watch import PolicyWatch
from lineage_listener.govern.webhook import Webhook
from lineage_listener.query.names import Aliases
from lineage_listener.query.store import LineageStore, UnknownNameError
from lineage_listener.server.access.gate import identity, sight
from lineage_listener.server.api import _answer, _store
from lineage_listener.server.collect import _write
from lineage_listener.server.state import ServerState, require_token, state
from lineage_listener.store.group_writer import QueueFull

router = APIRouter()
log = logging.getLogger(__name__)


@dataclass
class Governance:
    """``serve``'s governance options: a policy, a webhook for its violations, a classifications file."""

    policy: Policy | None = None
    webhook_url: str | None = None
    webhook_token: str | None = None       # read from the environment by the caller, never argv
    webhook_attempts: int = 8
    webhook_backoff: float = 1.0
    classifications: Path | None = None
    token_name: str = "api-token"           # who REST writes are recorded as set by


def attach(app: FastAPI, st: ServerState, options: Governance | None) -> None:
    """Start the policy watch (when there is a policy or a classifications file) beside ``st``'s writer."""
    options = options or Governance()
    app.state.governance = options
    app.state.policy_watch = None
    if options.policy is None and options.classifications is None:
        return
    webhook = None
    if options.webhook_url and options.policy is not None:
        webhook = Webhook(options.webhook_url, options.webhook_token, attempts=options.webhook_attempts,
                          backoff=options.webhook_backoff)

    def write(batch) -> None:  # noqa: ANN001 - a Batch; the answer is not awaited
        st.writer.submit(batch, lambda answer: None)
    watch = PolicyWatch(st.read, write, options.policy, webhook, options.classifications)
    st.writer.on_commit.append(watch.written)
    watch.start()
    app.state.policy_watch = watch


def detach(app: FastAPI) -> None:
    watch = getattr(app.state, "policy_watch", None)
    if watch is not None:
        watch.close()


@router.get("/api/labels")
def get_labels(dataset: str | None = None, column: str | None = None, propagated: bool = True,
               datasets: list[str] = Query(default=[], max_length=100), influence: bool = True,
               history: bool = False, st: ServerState = Depends(state)) -> dict:
    """Labels of every labelled column (no dataset), of a dataset's columns, of one column, or of the
    columns of several ``datasets`` (a graph's): ``{"columns": [{"dataset", "column", "labels": [{"label",
    "source": "set|file|spark|propagated", "path": [[dataset, column, transform], ...], "hops"}],
    "masked", "influenced_by"}]}``. Propagated labels are those the data holds now; ``history``: also
    copies a later replacing write overwrote."""
    if datasets:
        return _answer(_labels_of, _store(st), datasets, influence, history)
    return _answer(answers.column_labels, _store(st), dataset, column, propagated=propagated, influence=influence,
                   history=history)


def _labels_of(store: LineageStore, datasets: list[str], influence: bool, history: bool = False) -> dict:
    """The labelled, masked or influenced columns of ``datasets``; a name the store does not know is left out."""
    with store.connect() as con:
        aliases = Aliases(con)
        nodes = []
        for name in datasets:
            try:
                nodes += answers.columns(con, aliases, name)
            except UnknownNameError:
                continue
        p = answers.run(con, nodes, influence=influence, aliases=aliases, current=not history)
        out = [answers.column_row(p, n) for n in nodes]
    return {"columns": [r for r in out if r["labels"] or r["masked"] or r["influenced_by"]]}


@router.get("/api/labels/history")
def label_history(request: Request, dataset: str | None = None, column: str | None = None,
                  limit: int = Query(200, ge=1, le=5000), st: ServerState = Depends(state)) -> list[dict]:
    """Changes of declared labels, newest first: who set or removed which label, when, from where."""
    with st.read() as con:
        return labelstore.history(con, dataset, column, limit, within=sight(request).within)


class LabelChange(BaseModel):
    dataset: str
    column: str
    label: str
    value: bool | None = None


async def _change(request: Request, st: ServerState, body: LabelChange, unset: bool) -> JSONResponse:
    who = identity(request)  # with --access: the admin's own name
    by = who.name if who is not None else getattr(request.app.state, "governance", Governance()).token_name
    batch = _answer(_label_batch, st, body, unset, by)
    try:
        return await _write(request, st, batch)
    except QueueFull as exc:
        raise HTTPException(503, str(exc), headers={"Retry-After": str(exc.retry_after)}) from None


def _label_batch(st: ServerState, body: LabelChange, unset: bool, by: str):  # noqa: ANN202 - a store Batch
    """The batch that sets or removes ``body``'s label, its names resolved against the store."""
    with st.read() as con:
        if unset:
            return labelstore.unset_batch(declare.resolve_unset(con, [(body.dataset, body.column, body.label)]), by)
        return labelstore.set_batch(declare.resolve(con, [(body.dataset, body.column, body.label, body.value)]), by)


@router.post("/api/labels")
async def post_label(request: Request, body: LabelChange, st: ServerState = Depends(require_token)) -> JSONResponse:
    """Declare a label on a column (``value`` false, or a label ``!pii``: a review saying it does not carry it)."""
    return await _change(request, st, body, unset=False)


@router.delete("/api/labels")
async def delete_label(request: Request, body: LabelChange, st: ServerState = Depends(require_token)) -> JSONResponse:
    """Remove a label declared with ``set`` (CLI, REST, UI)."""
    return await _change(request, st, body, unset=True)


@router.get("/api/violations")
def violations(request: Request, resolved: bool = False) -> dict[str, Any]:
    """Violations the policy watch found (``resolved``: also those a later write cleared), the policy's
    rules, the watch's state and the webhook's (``pending``, ``sent``, ``retries``, ``given_up``,
    ``last_error``)."""
    watch: PolicyWatch | None = request.app.state.policy_watch
    if watch is None or watch.policy is None:
        return {"policy": None, "violations": [], "watch": None, "webhook": None}
    policy = watch.policy
    return {"policy": {"origin": policy.origin,
                       "rules": [{"name": r.name, "kind": r.kind, "label": r.label, "datasets": list(r.datasets)}
                                 for r in policy.rules]},
            "violations": watch.violations(include_resolved=resolved), "watch": watch.stats(),
            "webhook": watch.webhook.stats() if watch.webhook is not None else None}

