"""``lineage-listener classify set|unset|list|load|why``: labels (classifications) on columns.

``set DATASET COLUMN LABEL`` declares a label (``!pii``, or ``--value false``: a review saying
the column does not carry it); ``load FILE`` declares a classifications file's labels;
``list`` shows declared labels (``--propagated``: also where they travel, masked copies and
influence); ``why DATASET COLUMN`` shows the path each label took to a column.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from lineage_listener.cli import CliError
from lineage_listener.cli.lineage_format import guard, name, open_for_cli, to_json, when
from lineage_listener.cli.render import table


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"not true or false: {text!r}")


def register(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    s = sub.add_parser("set", help="declare a label on a column (!LABEL or --value false: reviewed, does not carry it)")
    _target(s)
    s.add_argument("label", help="a dotted label (pii, pii.email); !pii: the column does not carry pii")
    s.add_argument("--value", type=_bool, default=None, help="true (default) or false (a review: not LABEL)")
    s.add_argument("--by", help="who sets it (default: the OS user)")
    s.set_defaults(func=run_set)
    u = sub.add_parser("unset", help="remove a label declared with set (--source spark: one read from Spark's metadata)")
    _target(u)
    u.add_argument("label")
    u.add_argument("--by", help="who removes it (default: the OS user)")
    u.add_argument("--source", choices=("set", "spark"), default="set",
                   help="which declaration to remove: set (default), or spark: a label Spark's metadata no longer "
                        "has (capture records labels it reads, never their removal)")
    u.set_defaults(func=run_unset)
    ls = sub.add_parser("list", help="declared labels; --propagated: also where they travel")
    ls.add_argument("--store", required=True, help="path of the DuckDB store")
    ls.add_argument("--dataset", help="only this dataset's columns (every known column, labelled or not)")
    ls.add_argument("--column", help="only this column (with --dataset)")
    ls.add_argument("--propagated", action="store_true",
                    help="also labels propagated along copies, masked copies and influence (as the data is now)")
    ls.add_argument("--history", action="store_true",
                    help="with --propagated: also copies a later replacing write overwrote")
    ls.add_argument("--format", choices=("text", "json"), default="text")
    ls.set_defaults(func=run_list)
    ld = sub.add_parser("load", help="declare the labels of a classifications file (YAML)")
    ld.add_argument("--store", required=True, help="path of the DuckDB store")
    ld.add_argument("file", help="the classifications file")
    ld.add_argument("--by", help="who loads it (default: the OS user)")
    ld.add_argument("--strict", action="store_true",
                    help="an entry or column that matches nothing of the store is an error (exit 2, nothing "
                         "loaded) rather than a warning")
    ld.set_defaults(func=run_load)
    w = sub.add_parser("why", help="the path each label took to a column")
    _target(w)
    w.add_argument("label", nargs="?", help="only this label (and its kinds)")
    w.add_argument("--history", action="store_true", help="also paths a later replacing write made history")
    w.add_argument("--format", choices=("text", "json"), default="text")
    w.set_defaults(func=run_why)


def _target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("dataset", help="canonical dataset name, e.g. spark_catalog.shop.orders, or its path")
    p.add_argument("column", help="column name")


def _written(ok: Any, what: str, store: str) -> None:
    """What was declared; when it did not reach the store now, why and where it waits (one line)."""
    if ok:
        print(what)
        return
    reason = getattr(ok, "reason", None) or "busy"
    spooled = getattr(ok, "spooled", None)
    where = f"spooled to {spooled.parent}" if spooled is not None else "kept nowhere: it is lost"
    print(f"{what}: not in the store {store} yet ({reason}); {where}, written by the next write that can",
          file=sys.stderr)


def run_set(args: argparse.Namespace) -> int:
    from lineage_listener.govern.declare import set_labels

    open_for_cli(args.store)
    ok = guard(set_labels, args.store, [(args.dataset, args.column, args.label, args.value)], by=args.by)
    value = not args.label.startswith("!") and args.value is not False
    _written(ok, f"set {args.label.lstrip('!')}={str(value).lower()} on {name((args.dataset, args.column))}",
             args.store)
    return 0 if ok else 1


def run_unset(args: argparse.Namespace) -> int:
    from lineage_listener.govern.declare import unset_labels

    open_for_cli(args.store)
    ok = guard(unset_labels, args.store, [(args.dataset, args.column, args.label)], by=args.by, source=args.source)
    what = f"unset {args.label.lstrip('!')}" + (f" ({args.source})" if args.source != "set" else "")
    _written(ok, f"{what} on {name((args.dataset, args.column))}", args.store)
    return 0 if ok else 1


def run_load(args: argparse.Namespace) -> int:
    from lineage_listener.govern.declare import load_file

    open_for_cli(args.store)
    found, ok = guard(load_file, args.store, args.file, by=args.by, strict=args.strict)
    for line in found.skipped:
        print(f"lineage-listener: warning: {line} (not loaded)", file=sys.stderr)
    columns = {(d, c) for d, c, _, _ in found.labels}
    functions = len(found.masking_functions)
    _written(ok, f"loaded {_n(len(found.labels), 'label')} on {_n(len(columns), 'column')}"
             + (f" and {_n(functions, 'masking function')}" if functions else "")
             + f" from {args.file}", args.store)
    return 0 if ok else 1


def _n(count: int, word: str) -> str:
    """``count`` and ``word``, plural unless one.

    >>> _n(1, "masking function"), _n(5, "label")
    ('1 masking function', '5 labels')
    """
    return f"{count} {word}{'' if count == 1 else 's'}"


def run_list(args: argparse.Namespace) -> int:
    from lineage_listener.govern.answers import column_labels

    if args.column and not args.dataset:
        raise CliError("--column needs --dataset")
    answer = guard(column_labels, open_for_cli(args.store), args.dataset, args.column, propagated=args.propagated,
                   history=args.history)
    print(to_json(answer) if args.format == "json" else list_text(answer, args.propagated, every=bool(args.dataset)))
    return 0


def run_why(args: argparse.Namespace) -> int:
    from lineage_listener.govern.answers import column_labels
    from lineage_listener.govern.patterns import check_label, is_kind_of

    wanted = guard(check_label, args.label.lstrip("!")) if args.label else None
    answer = guard(column_labels, open_for_cli(args.store), args.dataset, args.column, history=args.history)
    row = answer["columns"][0]
    keep = lambda items: [x for x in items if wanted is None or is_kind_of(x["label"], wanted)]  # noqa: E731
    row = {**row, "labels": keep(row["labels"]), "masked": keep(row["masked"]),
           "influenced_by": keep(row["influenced_by"])}
    print(to_json(row) if args.format == "json" else why_text(row))
    return 0


def _source(item: dict[str, Any]) -> str:
    if item["source"] == "propagated":
        hops = len(item["path"]) - 1
        return f"propagated from {name(tuple(item['from']))} ({hops} hop{'s' if hops != 1 else ''})"
    by = f" by {item['set_by']}" if item.get("set_by") else ""
    return f"{item['source']}{by} {when(item.get('set_at'))}".strip()


def list_text(answer: dict[str, Any], propagated: bool, every: bool = False) -> str:
    """The answer as a table, one row per label of a column; ``every``: a column without a label too
    (``--dataset``: every known column of the dataset, labelled or not)."""
    rows = []
    for col in answer["columns"]:
        if every and not (col["labels"] or col.get("masked") or col.get("influenced_by")):
            rows.append([name((col["dataset"], col["column"])), "-", "no label", ""])
        for item in col["labels"]:
            label = item["label"] if item["value"] else f"!{item['label']} (not {item['label']})"
            rows.append([name((col["dataset"], col["column"])), label, "declared" if item["source"] != "propagated"
                         else "copy", _source(item)])
        for key, what in (("masked", "masked copy"), ("influenced_by", "influenced")):
            for item in col.get(key, []):
                via = f" via {', '.join(item['via'])}" if item.get("via") else ""
                rows.append([name((col["dataset"], col["column"])), item["label"], what,
                             f"from {name(tuple(item['from']))}{via}"])
    note = ("copy: reached by direct, unmasked edges (labels travel); masked copy: every path masks; "
            "influenced: only through a filter/join/group/sort/window/condition key (labels do not travel)")
    return table(["column", "label", "how", "source"], rows) + ("\n" + note if propagated else "")


def why_text(row: dict[str, Any]) -> str:
    head = name((row["dataset"], row["column"]))
    out = []
    for key, what in (("labels", "carries"), ("masked", "gets masked"), ("influenced_by", "is influenced by")):
        for item in row.get(key, []):
            if item["source"] != "propagated":
                verb = "is declared" if item["value"] else "is declared NOT"
                out.append(f"{head} {verb} {item['label']}: {_source(item)}")
                continue
            out.append(f"{head} {what} {item['label']} from {name(tuple(item['from']))}:")
            for hop in item["hops"]:
                mark = " (masking)" if hop["masking"] else ""
                app = hop.get("application") or hop.get("run_id") or "?"
                out.append(f"  {name(tuple(hop['source']))} -> {name(tuple(hop['target']))}  "
                           f"{hop['transform']}{mark}  by {app}, query {hop['query_id']}, captured "
                           f"{when(hop['captured_at'])} (edge seen {when(hop['first_seen'])} .. "
                           f"{when(hop['last_seen'])})")
    return "\n".join(out) if out else f"{head} carries no label, and no label reaches it"
