"""What changed in the lineage, over REST: one diff, and the change points of an application or a
dataset over time (the UI's "what changed" pages). Read-only; the same answers as ``lineage-listener
diff`` (:mod:`lineage_listener.govern`)."""
from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Query, Request

from lineage_listener.govern import history
from lineage_listener.govern.diff import diff as lineage_diff
from lineage_listener.server.access.gate import sight
from lineage_listener.server.api import _answer, _store
from lineage_listener.server.state import ServerState, state

router = APIRouter()


@router.get("/api/diff")
def diff(app: str | None = None, runs: list[str] | None = Query(None), windows: list[str] | None = Query(None),
         rows_factor: float | None = Query(None, gt=1), st: ServerState = Depends(state)) -> dict:
    """What changed: ``app`` alone compares its last run with the run before; ``runs=OLD&runs=NEW``
    two runs; ``windows=FROM..TO&windows=FROM..TO`` two capture time windows (of ``app`` when given).
    ``added``/``removed``: datasets, columns and edges; ``changed``: edges whose transform, kind,
    expression or masking changed (``before``/``after``); ``labels``: labels newly reaching a column;
    with ``rows_factor=F``, ``rows``: datasets whose rows written changed by more than ``F`` times."""
    return _answer(lineage_diff, _store(st), app=app, runs=runs, windows=windows, rows_factor=rows_factor).data()


@router.get("/api/diff/history")
def diff_history(app: str | None = None, dataset: str | None = None, limit: int = Query(20, ge=1, le=500),
                 st: ServerState = Depends(state)) -> dict:
    """Where the lineage changed over time, newest first: an ``app``'s runs, each against the run
    before, or the runs that wrote a ``dataset``, each against the same application's run before.
    Runs with unchanged lineage are counted (``runs_kept``), not listed."""
    if (app is None) == (dataset is None):
        raise HTTPException(400, "give one of app or dataset")
    if app is not None:
        return _answer(history.app_history, _store(st), app, limit)
    return _answer(history.dataset_history, _store(st), dataset, limit)


@router.get("/api/diff/apps")
def diff_apps(request: Request, st: ServerState = Depends(state)) -> list[dict]:
    """Every application that captured lineage: its number of runs, first and last run."""
    return _answer(history.applications, _store(st), within=sight(request).within)
