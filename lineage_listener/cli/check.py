"""``lineage-listener check --store S --policy FILE [--since 1d] [--history] [--strict] [--format text|json|junit]``:
check a policy over the store, for CI. Exit 0 when clean, 1 on a violation, 2 for a bad policy file (one
line naming the rule and the problem; nothing is checked). A rule pattern that matches no dataset,
or a label declared on no column, is a warning on stderr (``--strict``: exit 2, nothing checked)."""
from __future__ import annotations

import argparse
import sys
import xml.etree.ElementTree as ET
from typing import Any

from lineage_listener.cli import CliError
from lineage_listener.cli.lineage_format import name, open_for_cli, to_json, when


def register(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", required=True, help="path of the DuckDB store")
    p.add_argument("--policy", required=True, help="the policy file (YAML)")
    p.add_argument("--since", help="look at the past: paths whose last hop was captured since 1d, 24h, 2026-11-01 "
                                   "(default: the data as it is now)")
    p.add_argument("--until", help="window end, same forms (default: now)")
    p.add_argument("--history", action="store_true",
                   help="judge every path ever captured, also those a later replacing write made history")
    p.add_argument("--strict", action="store_true",
                   help="a rule pattern that matches no dataset, or a label declared on no column, is an error "
                        "(exit 2) rather than a warning")
    p.add_argument("--format", choices=("text", "json", "junit"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from lineage_listener.govern.checks import check_store
    from lineage_listener.govern.policy import PolicyError, load

    try:
        policy = load(args.policy)
    except PolicyError as exc:
        raise CliError(str(exc)) from None
    store = open_for_cli(args.store)
    try:
        report = check_store(store, policy, args.since, args.until, history=args.history, strict=args.strict)
    except (PolicyError, ValueError) as exc:
        raise CliError(str(exc)) from None
    warn(report)
    render = {"json": lambda r, p: to_json(r), "junit": junit, "text": text}[args.format]
    print(render(report, policy))
    return 1 if report["violations"] else 0


def warn(report: dict[str, Any]) -> None:
    """The report's warnings, one line each on stderr (everything else was checked)."""
    for line in report.get("warnings", ()):
        print(f"lineage-listener: warning: {line}", file=sys.stderr)


def text(report: dict[str, Any], policy: Any) -> str:
    out = []
    by_rule: dict[str, list[dict]] = {}
    for v in report["violations"]:
        by_rule.setdefault(v["rule"], []).append(v)
    for rule in policy.rules:
        found = by_rule.get(rule.name, [])
        out.append(f"{'FAIL' if found else 'ok  '} {rule.name} ({rule.kind}"
                   + (f" {rule.label}" if rule.label else "") + f"): {len(found)} violation"
                   + ("s" if len(found) != 1 else ""))
        for v in found:
            out.append(f"  {name((v['dataset'], v['column'] or '*'))}: {v['message']}")
            if len(v["path"]) > 1:
                out.append("    path: " + " -> ".join(
                    name((d, c or "*")) + (f" ({t})" if t else "") for d, c, t in v["path"]))
            if v["applications"]:
                out.append(f"    applications: {', '.join(v['applications'])}; last seen {when(v['last_seen'])}")
            by = v.get("written_by")
            if by and by.get("query_id"):
                out.append(f"    written by {by['application'] or 'query'} {by['query_id']} at {when(by['captured_at'])}"
                           + (", which replaced the dataset" if by.get("replaced") else ""))
    checked = report["checked"]
    total = len(report["violations"])
    out.append(f"{checked['rules']} rules over {checked['columns']} columns: "
               + (f"{total} violation{'s' if total != 1 else ''}" if total else "no violation"))
    out += [f"note: {line}" for line in report.get("notes", ())]
    return "\n".join(out)


def junit(report: dict[str, Any], policy: Any) -> str:
    """One testcase per rule, one failure per violation (CI systems read this)."""
    suite = ET.Element("testsuite", name="lineage-listener check", tests=str(len(policy.rules)),
                       failures=str(sum(1 for r in policy.rules
                                        if any(v["rule"] == r.name for v in report["violations"]))))
    for rule in policy.rules:
        case = ET.SubElement(suite, "testcase", classname=f"policy.{rule.kind}", name=rule.name)
        for v in (v for v in report["violations"] if v["rule"] == rule.name):
            failure = ET.SubElement(case, "failure", type=rule.kind, message=v["message"])
            failure.text = "\n".join(
                [f"{name((v['dataset'], v['column'] or '*'))}"]
                + [" -> ".join(name((d, c or "*")) + (f" ({t})" if t else "") for d, c, t in v["path"])]
                + ([f"applications: {', '.join(v['applications'])}"] if v["applications"] else []))
    ET.indent(suite)
    return ET.tostring(suite, encoding="unicode", xml_declaration=True)
