"""``create_app(store, token)``: the API, the collector and the UI in one FastAPI application."""
from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from lineage_listener import __version__
from lineage_listener.server import api, collect
from lineage_listener.server.state import ServerState

STATIC = Path(str(resources.files("lineage_listener.server").joinpath("static")))


def create_app(store: str | Path, token: str | None = None) -> FastAPI:
    app = FastAPI(title="lineage-listener", version=__version__,
                  description="Column-level lineage captured from Spark: read API, collector, UI.")
    app.state.lineage = ServerState(Path(store).expanduser().absolute(), token)
    app.include_router(api.router)
    app.include_router(collect.router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"detail": f"bad parameter {problems}"}, status_code=400)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict:
        return {"ok": True, "store": str(app.state.lineage.store)}
    return app
