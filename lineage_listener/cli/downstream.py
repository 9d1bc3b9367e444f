"""``lineage-listener downstream --store PATH DATASET COLUMN``: the columns a column feeds."""
from __future__ import annotations

import argparse

from lineage_listener.cli.lineage_format import register_graph_command


def register(p: argparse.ArgumentParser) -> None:
    register_graph_command(p, "downstream")
