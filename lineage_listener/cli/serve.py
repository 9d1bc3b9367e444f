"""``lineage-listener serve --store PATH``: the lineage server (REST API, collector, UI) on uvicorn."""
from __future__ import annotations

import argparse
import ipaddress
import logging
import os

from lineage_listener.cli import CliError, kafka_options
from lineage_listener.store.group_writer import Settings

TOKEN_ENV = "LINEAGE_SERVER_TOKEN"
WEBHOOK_TOKEN_ENV = "LINEAGE_WEBHOOK_TOKEN"
log = logging.getLogger(__name__)


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store (this process is its writer)")
    p.add_argument("--host", default="127.0.0.1", help="bind address (default %(default)s; another needs --access, "
                                                          "or --public-read and a token)")
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--token-env", default=TOKEN_ENV,
                   help="environment variable holding the token that writes (and non-loopback use) require "
                        "(default %(default)s; never on the command line)")
    p.add_argument("--token", dest="token_on_command_line", metavar="TOKEN", help=argparse.SUPPRESS)
    p.add_argument("--tls-cert", metavar="FILE", help="serve HTTPS with this certificate (PEM, its chain after it)")
    p.add_argument("--tls-key", metavar="FILE", help="the certificate's private key (PEM)")
    p.add_argument("--keep", metavar="AGE", help="prune per-run records older than AGE (e.g. 400d) at start "
                                                 "and daily; edges keep their first/last time (default: keep all)")
    a = p.add_argument_group("access", "who may read and write what (docs/security.md)")
    a.add_argument("--access", metavar="FILE", help="an access file (YAML): identities (tokens, OIDC, a proxy) and "
                                                    "their grants; every route but /healthz then needs an identity, "
                                                    "each reader sees what it may read, every request is audited")
    a.add_argument("--public-read", action="store_true",
                   help="without --access on an address other than this machine's: say that reads are open to "
                        "anyone who reaches the port")
    a.add_argument("--keep-audit", metavar="AGE", help="with --access: prune audit records older than AGE at start and "
                                                       "daily (default 400d)")
    g = p.add_argument_group("governance", "labels and policies checked on every batch written")
    g.add_argument("--classifications", metavar="FILE",
                   help="a classifications file (YAML), declared on the store at start and as datasets arrive")
    g.add_argument("--policy", metavar="FILE", help="a policy file (YAML) checked on every batch, off the writer")
    g.add_argument("--strict", action="store_true",
                   help="refuse to start when a policy pattern or a classifications entry matches nothing of the "
                        "store, or a policy label is declared on no column (default: a warning, checked as data "
                        "arrives)")
    g.add_argument("--webhook", metavar="URL", help="POST each new policy violation here (retried with backoff)")
    g.add_argument("--webhook-token-env", default=WEBHOOK_TOKEN_ENV, metavar="NAME",
                   help="environment variable holding the webhook's bearer token (default %(default)s)")
    g.add_argument("--webhook-attempts", type=int, default=8, metavar="N",
                   help="calls per violation before giving it up (default %(default)s)")
    g.add_argument("--webhook-backoff", type=float, default=1.0, metavar="SECONDS",
                   help="wait before the first retry, doubled each time up to 60 s (default %(default)s)")
    g.add_argument("--token-name", default="api-token", metavar="NAME",
                   help="who labels set over REST are recorded as set by (default %(default)s)")
    w = p.add_argument_group("store writer", "batches waiting are written together, one commit per group")
    w.add_argument("--group-rows", type=int, default=Settings.group_rows, metavar="N",
                   help="rows at most in one group commit (default %(default)s; a bigger batch goes alone)")
    w.add_argument("--queue-rows", type=int, default=Settings.queue_rows, metavar="N",
                   help="rows waiting at most; further POSTs are answered 503 with Retry-After "
                        "(default %(default)s)")
    w.add_argument("--release-idle", type=float, default=Settings.release_idle, metavar="SECONDS",
                   help="keep the store open this long after the last batch (default %(default)s: close it as "
                        "soon as none waits, so other processes can open it; more saves reopening it)")
    w.add_argument("--lock-timeout", type=float, default=Settings.lock_timeout, metavar="SECONDS",
                   help="wait this long for the store while another process holds it, then spool batches beside "
                        "it (202; written once the store is free) (default %(default)s)")
    w.add_argument("--hold", type=float, default=Settings.hold, metavar="SECONDS",
                   help="while busy, let the store go at least this often for other processes "
                        "(default %(default)s)")
    kafka_options.add(p)
    p.set_defaults(func=run)


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _tls(args: argparse.Namespace) -> dict[str, str]:
    """uvicorn's TLS settings from ``--tls-cert`` / ``--tls-key``, loaded once now: a bad pair is one
    line and exit 2 before anything starts."""
    if not args.tls_cert and not args.tls_key:
        return {}
    if not args.tls_cert or not args.tls_key:
        raise CliError("give both --tls-cert and --tls-key to serve HTTPS")
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(args.tls_cert, args.tls_key)
    except (OSError, ssl.SSLError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise CliError(f"--tls-cert {args.tls_cert} / --tls-key {args.tls_key}: cannot be used ({reason})") from None
    if os.stat(args.tls_key).st_mode & 0o077:
        log.warning("lineage-listener serve: the private key %s can be read by other users (chmod 600 it)",
                    args.tls_key)
    return {"ssl_certfile": args.tls_cert, "ssl_keyfile": args.tls_key}


def _access(args: argparse.Namespace, token: str | None):  # noqa: ANN202 - server.access.gate.Access
    """The access file read and checked now (one line and exit 2 when it cannot be used), or None."""
    if args.access is None:
        if args.keep_audit is not None:
            raise CliError("--keep-audit needs --access (a server without it keeps no audit)")
        return None
    if args.public_read:
        raise CliError("--public-read and --access contradict each other: the access file says who may read")
    from lineage_listener.server.access.accessfile import AccessError, load
    from lineage_listener.server.access.credentials import Credentials
    from lineage_listener.server.access.gate import Access
    from lineage_listener.server.access.oidc import Issuer, IssuerUnreachable

    try:
        file = load(args.access)
    except AccessError as exc:
        raise CliError(str(exc)) from None
    issuer = Issuer(file.oidc) if file.oidc is not None else None
    if issuer is not None:
        try:
            issuer.discovery()
        except IssuerUnreachable as exc:  # it may come back: tokens are refused (503) until it does
            log.warning("lineage-listener serve: the OIDC issuer cannot be reached now: %s", exc)
    return Access(credentials=Credentials(file, issuer=issuer, writer_token=token, writer_name=args.token_name),
                  grants=file.grants, issuer=issuer)


def _governance(args: argparse.Namespace):  # noqa: ANN202 - server.governance_api.Governance
    """The governance options, their files read now: a bad one is one line and exit 2."""
    from pathlib import Path

    from lineage_listener.govern.labelfile import ClassificationsError, parse, read_yaml
    from lineage_listener.govern.policy import PolicyError, load
    from lineage_listener.server.governance_api import Governance

    policy = classifications = None
    try:
        if args.policy:
            policy = load(args.policy)
        if args.classifications:
            parse(read_yaml(args.classifications, "classifications file"), args.classifications)
            classifications = Path(args.classifications).expanduser().absolute()
    except (PolicyError, ClassificationsError) as exc:
        raise CliError(str(exc)) from None
    if args.strict and (policy or classifications) and Path(args.store).exists():
        _refuse_unmatched(args.store, policy, classifications)
    if args.webhook and not policy:
        raise CliError("--webhook needs --policy (the webhook gets the policy's violations)")
    if args.webhook_attempts < 1 or args.webhook_backoff < 0:
        raise CliError("--webhook-attempts must be at least 1 and --webhook-backoff not negative")
    return Governance(policy=policy, webhook_url=args.webhook, webhook_token=os.environ.get(args.webhook_token_env) or None,
                      webhook_attempts=args.webhook_attempts, webhook_backoff=args.webhook_backoff,
                      classifications=classifications,
                      token_name=args.token_name)


def _refuse_unmatched(store: str, policy, classifications) -> None:  # noqa: ANN001 - govern types, imported late
    """``--strict``: a policy pattern or classifications entry matching nothing is one line and exit 2."""
    from lineage_listener.govern import labelfile
    from lineage_listener.govern.checks import unmatched
    from lineage_listener.store.connection import open_readonly

    con = open_readonly(store)
    try:
        problems = (unmatched(con, policy) if policy else []) + (
            labelfile.load(con, classifications, strict=False).skipped if classifications else [])
    finally:
        con.close()
    if problems:
        raise CliError(f"{problems[0]} (--strict)")


def run(args: argparse.Namespace) -> int:
    if args.token_on_command_line is not None:
        raise CliError(f"serve takes no --token (a token on the command line shows in ps and shell history): "
                       f"put it in the environment variable {args.token_env}, or name another variable with "
                       f"--token-env NAME")
    governance = _governance(args)  # a bad file is one line before anything starts
    tls = _tls(args)
    import uvicorn  # a missing server extra is reported by the CLI with its install line

    from lineage_listener.server.app import create_app
    from lineage_listener.store.prune import KEEP_AUDIT, parse_keep

    try:
        keep = parse_keep(args.keep) if args.keep is not None else None
        keep_audit = parse_keep(args.keep_audit) if args.keep_audit is not None else KEEP_AUDIT
    except ValueError as exc:
        raise CliError(str(exc)) from None
    token = os.environ.get(args.token_env) or None
    access = _access(args, token)
    if access is None and not _loopback(args.host):
        if not args.public_read:
            raise CliError(f"binding {args.host} would let anyone who reaches it read every dataset's lineage: give "
                           f"--access FILE (who may read what), or --public-read to say reads are open to anyone")
        if not token:
            raise CliError(f"binding {args.host} exposes the store beyond this machine: set a token in "
                           f"${args.token_env} first")
    if not token and access is None:
        why = "is empty" if args.token_env in os.environ else "is not set"
        log.warning("lineage-listener serve: writes are disabled (POST /api/batches and /api/v1/lineage answer "
                    "403): $%s %s", args.token_env, why)
    for name in ("group_rows", "queue_rows"):
        if getattr(args, name) < 1:
            raise CliError(f"--{name.replace('_', '-')} must be at least 1")
    settings = Settings(group_rows=args.group_rows, queue_rows=args.queue_rows, release_idle=args.release_idle,
                        hold=args.hold, lock_timeout=args.lock_timeout)
    app = create_app(args.store, token, settings, governance, access)
    ingest = kafka_options.ingest(args, app.state.lineage.writer)
    if ingest is not None:
        app.state.kafka = ingest
        app.state.before_close.append(ingest.stop)
    if keep is not None or access is not None:
        from lineage_listener.server import retention
        retention.start(app.state.lineage, keep, keep_audit=keep_audit if access is not None else None)
    if not tls and not _loopback(args.host):
        log.warning("lineage-listener serve: %s is served over plain HTTP: tokens and lineage cross the network "
                    "unencrypted (--tls-cert/--tls-key, or a TLS-terminating proxy in front)", args.host)
    # Headers up to 2 MiB are read (an issuer's JWT with many groups can pass h11's 16 KiB): an over-long
    # credential is then refused by the access check (401), not by the HTTP parser (400).
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", h11_max_incomplete_event_size=2 << 20,
                **tls)
    return 0
