"""The classifications file kept in the user's repository (YAML)::

    masking_functions: [my_hash]          # the user's own masking UDFs (beside Spark's built-in ones)
    classifications:
      - dataset: "file:/**/raw/customers.csv"   # a glob: * within a name part, ** across / and .
        columns:
          email: [pii.email]
          ssn: [pii]
          country: ["!pii"]               # a review: not pii

Read whole before anything is written: a malformed file, an unknown key, a bad label, a glob
that matches no dataset of the store or a column no matched dataset has is one
:class:`ClassificationsError` naming the entry and the problem.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import yaml

from lineage_listener.govern.patterns import PatternError, any_matches, glob_regex, parse_label
from lineage_listener.query.names import Aliases, closest

_TOP_KEYS = {"classifications", "masking_functions"}
_ENTRY_KEYS = {"dataset", "columns"}


class ClassificationsError(ValueError):
    """A classifications file that cannot be loaded; one line saying where and why."""


@dataclass
class Classifications:
    """What a file declares, resolved against a store: canonical dataset names."""

    origin: str
    labels: list[tuple[str, str, str, bool]] = field(default_factory=list)  # dataset, column, label, value
    masking_functions: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # not strict: what matched nothing (yet)


def read_yaml(path: str | Path, what: str) -> dict:
    """The mapping at the top of a YAML file, or ClassificationsError-like ValueError in one line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ClassificationsError(f"{what} {path}: cannot read it ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ClassificationsError(f"{what} {path}{where}: not valid YAML ({problem})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ClassificationsError(f"{what} {path}: the top level must be a mapping, not a "
                                   f"{type(data).__name__}")
    return data


def parse(data: dict, origin: str) -> tuple[list[tuple[str, dict[str, list[tuple[str, bool]]]]], list[str]]:
    """The entries ``(glob, {column: [(label, value)]})`` and masking functions of a file's data."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise ClassificationsError(f"{origin}: unknown key {sorted(unknown)[0]!r} (expected "
                                   f"{', '.join(sorted(_TOP_KEYS))})")
    functions = data.get("masking_functions") or []
    if not isinstance(functions, list) or not all(isinstance(f, str) and f.strip() for f in functions):
        raise ClassificationsError(f"{origin}: masking_functions must be a list of function names")
    entries = data.get("classifications") or []
    if not isinstance(entries, list):
        raise ClassificationsError(f"{origin}: classifications must be a list of {{dataset, columns}} entries")
    out = []
    for i, entry in enumerate(entries, 1):
        where = f"{origin}: classifications entry {i}"
        if not isinstance(entry, dict):
            raise ClassificationsError(f"{where}: must be a mapping with dataset and columns")
        extra = set(entry) - _ENTRY_KEYS
        if extra:
            raise ClassificationsError(f"{where}: unknown key {sorted(extra)[0]!r} (expected dataset, columns)")
        glob, columns = entry.get("dataset"), entry.get("columns")
        if not isinstance(glob, str) or not glob.strip():
            raise ClassificationsError(f"{where}: dataset must be a name or glob")
        if not isinstance(columns, dict) or not columns:
            raise ClassificationsError(f"{where} ({glob}): columns must map column names to lists of labels")
        parsed: dict[str, list[tuple[str, bool]]] = {}
        for column, labels in columns.items():
            if isinstance(labels, str):
                labels = [labels]
            if not isinstance(labels, list) or not labels:
                raise ClassificationsError(f"{where} ({glob}), column {column!r}: labels must be a list")
            try:
                parsed[str(column)] = [parse_label(x) for x in labels]
            except PatternError as exc:
                raise ClassificationsError(f"{where} ({glob}), column {column!r}: {exc}") from None
        try:
            glob_regex(glob.strip())
        except PatternError as exc:
            raise ClassificationsError(f"{where}: {exc}") from None
        out.append((glob.strip(), parsed))
    return out, [f.strip() for f in functions]


def known_datasets(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Every dataset name the store has seen (rows of datasets, ends of edges)."""
    return sorted(r[0] for r in con.execute(
        "SELECT dataset FROM datasets UNION SELECT source_dataset FROM edges "
        "UNION SELECT target_dataset FROM edges").fetchall() if r[0] is not None)


def known_columns(con: duckdb.DuckDBPyConnection, names: list[str]) -> set[str]:
    """Every column the store knows of the dataset stored under ``names`` (its aliases)."""
    return {r[0] for r in con.execute(
        """SELECT column_name FROM dataset_columns WHERE dataset IN (SELECT unnest($n))
           UNION SELECT source_column FROM edges WHERE source_dataset IN (SELECT unnest($n))
           UNION SELECT target_column FROM edges WHERE target_dataset IN (SELECT unnest($n))""",
        {"n": names}).fetchall() if r[0] is not None}


def resolve(con: duckdb.DuckDBPyConnection, data: dict, origin: str, strict: bool = True) -> Classifications:
    """The file's labels on the store's datasets and columns, or ClassificationsError. Not
    ``strict`` (a lineage server's file, applied again as datasets arrive): an entry or column that
    matches nothing yet is noted in ``skipped`` instead."""
    entries, functions = parse(data, origin)
    aliases = Aliases(con)
    names = known_datasets(con)
    aliases.resolve(names)
    canon = sorted({aliases.canonical(n) for n in names})
    out = Classifications(origin, masking_functions=functions)
    for i, (glob, columns) in enumerate(entries, 1):
        matched = [d for d in canon if any_matches([glob], aliases.names(d))]
        if not matched:
            hint = closest(glob, canon)
            problem = (f"{origin}: classifications entry {i}: dataset {glob!r} matches no dataset of the store"
                       + (f" (closest: {', '.join(hint)})" if hint else ""))
            if strict:
                raise ClassificationsError(problem)
            out.skipped.append(problem)
            continue
        have = {d: known_columns(con, sorted(aliases.names(d))) for d in matched}
        for column, labels in columns.items():
            holders = [d for d in matched if column in have[d]]
            if not holders:
                hint = closest(column, sorted(set().union(*have.values())))
                problem = (f"{origin}: classifications entry {i}: no dataset matching {glob!r} has a column "
                           f"{column!r}" + (f" (closest: {', '.join(hint)})" if hint else ""))
                if strict:
                    raise ClassificationsError(problem)
                out.skipped.append(problem)
                continue
            out.labels.extend((d, column, label, value) for d in holders for label, value in labels)
    return out


def load(con: duckdb.DuckDBPyConnection, path: str | Path, strict: bool = True) -> Classifications:
    """Read and resolve the classifications file at ``path`` (origin: its absolute path)."""
    origin = str(Path(path).expanduser().absolute())
    return resolve(con, read_yaml(path, "classifications file"), origin, strict)
