"""``lineage-listener serve --store PATH``: the lineage server (REST API, collector, UI) on uvicorn."""
from __future__ import annotations

import argparse
import ipaddress
import os

from lineage_listener.cli import CliError

TOKEN_ENV = "LINEAGE_SERVER_TOKEN"


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="serve the store: REST API, collector for remote jobs, web UI")
    p.add_argument("--store", required=True, help="path of the DuckDB store (this process is its writer)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default %(default)s; another needs a token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token-env", default=TOKEN_ENV,
                   help="environment variable holding the token that writes (and non-loopback use) require "
                        "(default %(default)s; never on the command line)")
    p.set_defaults(func=run)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from lineage_listener.server.app import create_app
    except ImportError as exc:
        raise CliError(f"the server is not installed ({exc}): pip install 'lineage-listener[server]'") from None
    token = os.environ.get(args.token_env) or None
    if not _loopback(args.host) and not token:
        raise CliError(f"binding {args.host} exposes the store beyond this machine: set a token in "
                       f"${args.token_env} first")
    uvicorn.run(create_app(args.store, token), host=args.host, port=args.port, log_level="warning")
    return 0
