"""The lineage server: one process owns the store, collects batches from every job, answers over
REST and draws lineage in the browser.

``app.create_app(store, token)`` builds the FastAPI application: ``api`` (read-only JSON),
``collect`` (token-protected writes: capture batches and OpenLineage events) and the
static UI in ``static/``. ``lineage-listener serve`` runs it on uvicorn.
"""
