"""``create_app(store, token)``: the API, the collector and the UI in one FastAPI application."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from lineage_listener.server import api, collect, diff_api, governance_api, views_api
from lineage_listener.server import health as health_api
from lineage_listener.server.state import ServerState
from lineage_listener.store.group import Settings
from lineage_listener.version import __version__

STATIC = Path(str(resources.files("lineage_listener.server").joinpath("static")))

#: Every router of the server, in the order they are mounted (docs/reference/rest.md is generated from them).
ROUTERS = (api.router, collect.router, views_api.router, health_api.router, governance_api.router,
           diff_api.router)


def create_app(store: str | Path, token: str | None = None, settings: Settings | None = None,
               governance: governance_api.Governance | None = None) -> FastAPI:
    """``settings``: how the store writer groups batches and lets the store go (defaults: ``Settings()``);
    ``governance``: a policy checked on every batch, its webhook, a classifications file."""
    lineage = ServerState(Path(store).expanduser().absolute(), token, settings=settings or Settings())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for stop in app.state.before_close:  # e.g. a Kafka consumer: stops feeding the writer first
            stop()
        governance_api.detach(app)  # the policy watch saves its last rows through the writer
        lineage.writer.close()  # what is queued is written, the store let go

    app = FastAPI(title="lineage-listener", version=__version__,
                  description="Column-level lineage captured from Spark: read API, collector, UI.",
                  docs_url=None, redoc_url=None, lifespan=lifespan)  # /docs: served below from local files
    app.state.lineage = lineage
    app.state.before_close = []
    for router in ROUTERS:
        app.include_router(router)
    governance_api.attach(app, lineage, governance)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.exception_handler(RequestValidationError)
    async def bad_parameter(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(x) for x in e['loc'][1:])}: {e['msg']}" for e in exc.errors())
        return JSONResponse({"detail": f"bad parameter {problems}"}, status_code=400)

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/docs", include_in_schema=False)
    def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url, title="lineage-listener API",
                                   swagger_js_url="/static/vendor/swagger-ui/swagger-ui-bundle.js",
                                   swagger_css_url="/static/vendor/swagger-ui/swagger-ui.css",
                                   swagger_favicon_url="/static/favicon.svg")

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict:
        return {"ok": True, "store": str(lineage.store), "writer": lineage.writer.stats()}
    return app
