"""``lineage-listener html --store PATH DATASET COLUMN -o lineage.html``: the UI's graph as one file to share."""
from __future__ import annotations

import argparse
import sys
from importlib import resources

from lineage_listener.cli.lineage_format import add_common, guard, open_for_cli, to_json
from lineage_listener.query import payload
from lineage_listener.timewindow import parse_time, utcnow


def register(p: argparse.ArgumentParser) -> None:
    add_common(p)
    p.add_argument("-o", "--out", default="lineage.html", help="file to write (default %(default)s)")
    p.add_argument("--direction", choices=("backward", "forward", "both"), default="backward")
    p.add_argument("--depth", type=int, default=None, help="hops to follow (default: all)")
    p.add_argument("--since", help="window start (ISO date/time or 7d, 24h...)")
    p.add_argument("--until", help="window end")
    p.add_argument("--direct-only", action="store_true", help="direct edges only")
    p.set_defaults(func=run)


#: The graph library and the UI's scripts that draw a graph without a server, in their order
#: (server/static/core.js names the rest).
LIBRARIES = ("vendor/cytoscape.min.js",)
SCRIPTS = ("core.js", "controls.js", "layout.js", "arrange.js", "graph.js", "explore.js", "standalone.js")


def _static(name: str) -> str:
    return resources.files("lineage_listener.server").joinpath("static", name).read_text(encoding="utf-8")


def page(data: dict) -> str:
    """One HTML page: the UI's style, graph library and drawing code inline, the graph as data."""
    scripts = "".join(f"<script>{_static(name)}</script>\n" for name in LIBRARIES)
    blob = to_json(data).replace("</", "<\\/")  # no </script> inside names or expressions
    return (f"<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>lineage of "
            f"{data['start']['dataset']} [{data['start']['column']}]</title><style>{_static('app.css')}</style>\n"
            f"{scripts}</head><body><header><span class=\"brand\">lineage-listener</span><form></form></header>"
            f"<main id=\"view\"></main><div id=\"tooltip\" hidden></div>\n"
            f"<script>window.LINEAGE_STATIC = {blob};</script>\n"
            + "".join(f"<script>{_static(name)}</script>\n" for name in SCRIPTS) + "</body></html>\n")


def run(args: argparse.Namespace) -> int:
    store = open_for_cli(args.store)
    data = guard(payload.column_lineage, store, args.dataset, args.column, args.direction, args.depth,
                 parse_time(args.since), parse_time(args.until, end=True), args.direct_only,
                 args.include_failed)
    data["written_at"] = utcnow().strftime("%Y-%m-%d %H:%M UTC")
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(page(data))
    outside = data["window"]["outside"]
    print(f"wrote {args.out}: {len(data['nodes'])} columns, {len(data['edges'])} edges"
          + (f"; outside the window: {outside['message']}" if outside else ""), file=sys.stderr)
    return 0


