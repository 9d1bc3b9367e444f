"""``lineage-listener push --url URL [--spool DIR]``: send spooled batches to a lineage server."""
from __future__ import annotations

import argparse
import sys

from lineage_listener import tls
from lineage_listener.cli import CliError
from lineage_listener.store import remote


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", required=True, help="the lineage server, e.g. http://lineage:8765")
    p.add_argument("--spool", help="a folder of spooled batches (default: those waiting for --url here)")
    p.add_argument("--tls-ca", metavar="FILE",
                   help="CA certificates (PEM) an https server's certificate is checked against, for a private CA "
                        "(default: the system's CAs)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.tls_ca:
        try:
            tls.context(args.tls_ca)
        except OSError as exc:
            raise CliError(f"--tls-ca {args.tls_ca}: cannot be read as CA certificates ({exc.strerror or exc})") from None
    try:
        sent, bad, left = remote.push(args.url, args.spool, tls_ca=args.tls_ca)
    except OSError as exc:
        refusal = tls.failure(exc)
        if refusal is not None:
            raise CliError(f"lineage server {args.url}: {refusal} (a private CA: --tls-ca FILE); nothing sent") from None
        raise CliError(f"lineage server {args.url} not reachable: {exc}") from None
    print(f"sent {sent} spooled batches to {args.url}" + (f"; {left} left" if left else "")
          + (f"; {bad} refused by the server, kept as .bad files" if bad else ""), file=sys.stderr)
    return 0 if not left and not bad else 1
