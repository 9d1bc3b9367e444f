"""``create_app(store, token)``: the API, the collector and the UI in one FastAPI application, behind
the gate of :mod:`lineage_listener.server.access` (security headers; with ``access``, identities,
grants, the visibility rule and the audit)."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles

from lineage_listener.server import api, collect, diff_api, governance_api, views_api
from lineage_listener.server import health as health_api
from lineage_listener.server.access import audit_api, login
from lineage_listener.server.access.audit import Audit
from lineage_listener.server.access.gate import Access, Gate, declared
from lineage_listener.server.state import ServerState
from lineage_listener.store.group_writer import Settings
from lineage_listener.version import __version__

STATIC = Path(str(resources.files("lineage_listener.server").joinpath("static")))

#: Every router of the server, in the order they are mounted (docs/reference/rest.md is generated from them).
ROUTERS = (api.router, collect.router, views_api.router, health_api.router, governance_api.router,
           diff_api.router, audit_api.router, login.router)

#: Swagger UI for ``/docs``, from the server's own files, started by a script file (no inline script).
DOCS_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>lineage-listener API</title>
<link rel="stylesheet" href="/static/vendor/swagger-ui/swagger-ui.css"><link rel="icon" href="/static/favicon.svg">
</head><body><div id="swagger-ui" data-openapi="{openapi}"></div>
<script src="/static/vendor/swagger-ui/swagger-ui-bundle.js"></script><script src="/static/swagger-init.js"></script>
</body></html>"""


def create_app(store: str | Path, token: str | None = None, settings: Settings | None = None,
               governance: governance_api.Governance | None = None, access: Access | None = None) -> FastAPI:
    """``settings``: how the store writer groups batches and lets the store go (defaults: ``Settings()``);
    ``governance``: a policy checked on every batch, its webhook, a classifications file; ``access``:
    who may read and write what (``serve --access``; None: reads are open, writes need ``token``)."""
    lineage = ServerState(Path(store).expanduser().absolute(), token, settings=settings or Settings())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        for stop in app.state.before_close:  # e.g. a Kafka consumer: stops feeding the writer first
            stop()
        governance_api.detach(app)  # the policy watch saves its last rows through the writer
        if access is not None and access.audit is not None:
            access.audit.close()  # the audit's last rows go to the writer
        lineage.writer.close()  # what is queued is written, the store let go

    app = FastAPI(title="lineage-listener", version=__version__,
                  description="Column-level lineage captured from Spark: read API, collector, UI.",
                  docs_url=None, redoc_url=None, lifespan=lifespan)  # /docs: served below from local files
    app.state.lineage = lineage
    app.state.before_close = []
    app.state.access = access
    if access is not None:
        access.audit = Audit(lineage.writer)
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
        return HTMLResponse(DOCS_PAGE.replace("{openapi}", app.openapi_url))

    @app.get("/favicon.ico", include_in_schema=False)
    def favicon() -> FileResponse:
        return FileResponse(STATIC / "favicon.svg", media_type="image/svg+xml")

    @app.get("/healthz", include_in_schema=False)
    def health() -> dict:
        if access is not None:  # open to anyone: says only that the server is up
            return {"ok": True}
        return {"ok": True, "store": str(lineage.store), "writer": lineage.writer.stats()}

    missing = declared(app.router.routes)
    if missing:
        raise RuntimeError(f"routes not declared in lineage_listener.server.access.visibility.ROUTES: "
                           f"{', '.join(missing)} (every route says what it needs and names)")
    app.add_middleware(Gate, access=access)
    if access is not None and access.credentials.file.cors:
        from starlette.middleware.cors import CORSMiddleware

        app.add_middleware(CORSMiddleware, allow_origins=list(access.credentials.file.cors),
                           allow_methods=["GET", "POST", "DELETE"], allow_headers=["Authorization", "Content-Type"])
    return app
