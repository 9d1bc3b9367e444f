"""``lineage-listener bridge-jar``: print the path of the bridge jar, building it if needed."""
from __future__ import annotations

import argparse

from lineage_listener.jar import BridgeBuildError, bridge_jar
from lineage_listener.cli import CliError


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rebuild", action="store_true", help="build it again even if it is cached")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        print(bridge_jar(rebuild=args.rebuild))
    except BridgeBuildError as exc:
        raise CliError(f"cannot build the bridge jar: {exc}") from None
    return 0
