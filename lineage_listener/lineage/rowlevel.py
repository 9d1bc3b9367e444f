"""Row-level writes: MERGE INTO, UPDATE and DELETE, as Delta Lake and DataSource V2 (Iceberg) plan them.

Every shape is read into one model, :class:`Clause` (what a WHEN clause or the statement
assigns, under which condition, or that it deletes), and :func:`assign` turns the model
into the walk's outputs and influences by the rules of docs/reference/semantics.md
("Row-level writes"):

- each value a clause assigns to a target column gives that column direct edges by the
  usual rules; a column a clause leaves as it was (the target's own column, Delta's
  explicit ``id = t.id`` actions, the copy-on-write carry-over) gives none;
- a clause's condition is ``conditional`` for the columns it assigns; a deleting clause's
  condition is ``filter`` for the whole target;
- MERGE's ON condition is ``join`` for the whole target (the join under ``MergeRows``, or
  Delta's ``condition`` field);
- ``UPDATE ... WHERE p``: ``p`` is ``conditional`` for the assigned columns;
  ``DELETE ... WHERE p``: ``p`` is ``filter`` for the whole target, with no direct edges.

Shapes (docs/development.md, "Facts about Spark that shaped the design"): Delta's ``MergeIntoCommand`` /
``UpdateCommand`` / ``DeleteCommand`` (V1 commands whose ``target``/``source`` plans and
clauses are fields, not children); DataSource V2 ``ReplaceData`` (copy-on-write) and
``WriteDelta`` (merge-on-read) over ``MergeRows`` (MERGE, positional ``Keep`` / ``Split`` /
``Discard`` instructions), over ``Project(If(p, value, column))`` or ``Expand`` (UPDATE),
or over a ``Filter`` / ``Project`` of row ids (DELETE).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from lineage_listener.lineage.model import (Attribute, Flow, Origin, Transform, as_influences,
                                            combine, ordered_influences, origin)
from lineage_listener.lineage.nodes import children
from lineage_listener.lineage.walker import Walk, attributes, handler
from lineage_listener.plan.tree import Node

#: Spark's row operation codes in a ``WriteDelta`` row (``RowDeltaUtils``).
DELETE_OPERATION = 1
#: The column ``WriteDelta`` plans carry the row operation in.
OPERATION_COLUMN = "__row_operation"
#: A synthetic exprId range for the target columns a statement writes (plan exprIds are >= 0).
_SYNTHETIC = -1_000_000_000

WHEN = {"matchedClauses": "WHEN MATCHED", "notMatchedClauses": "WHEN NOT MATCHED",
        "notMatchedBySourceClauses": "WHEN NOT MATCHED BY SOURCE",
        "matchedInstructions": "WHEN MATCHED", "notMatchedInstructions": "WHEN NOT MATCHED",
        "notMatchedBySourceInstructions": "WHEN NOT MATCHED BY SOURCE",
        "matchedActions": "WHEN MATCHED", "notMatchedActions": "WHEN NOT MATCHED",
        "notMatchedBySourceActions": "WHEN NOT MATCHED BY SOURCE"}


@dataclass
class Clause:
    """One way a statement changes target rows: assignments under a condition, or a delete."""

    label: str
    condition: Node | None = None
    assignments: list[tuple[str, Node]] = field(default_factory=list)  # (target column, value)
    deletes: bool = False


def assign(walk: Walk, targets: Sequence[Attribute], clauses: Sequence[Clause]) -> list[Attribute]:
    """Apply ``clauses`` to the target columns ``targets`` (their origins are in the walk):
    define and return one new attribute per column some clause really changes."""
    own = {a.name.lower(): a.expr_id for a in targets}
    parts: dict[str, list[tuple[str, Origin, Origin | None]]] = {}
    order = [a.name for a in targets]
    for clause in clauses:
        cond = walk.expression(clause.condition) if clause.condition is not None else None
        if clause.deletes:
            if cond is not None:
                walk.influences.extend(ordered_influences(cond, Transform.FILTER))
            continue
        for column, value in clause.assignments:
            if value.name == "AttributeReference" and value.expr_id == own.get(column.lower()):
                continue  # left as it was: no edge
            if column.lower() not in {c.lower() for c in order}:
                order.append(column)  # a column the statement adds (Delta schema evolution)
            parts.setdefault(column.lower(), []).append((clause.label, walk.expression(value), cond))
    out = []
    for i, column in enumerate(order):
        got = parts.get(column.lower())
        if not got:
            continue
        attr = next((a for a in targets if a.name.lower() == column.lower()), None)
        new = Attribute(_SYNTHETIC - i, column, attr.data_type if attr else None, attr.nullable if attr else True)
        walk.define(new.expr_id, _merged(got))
        out.append(new)
    return out


def _merged(parts: list[tuple[str, Origin, Origin | None]]) -> Origin:
    """One column's origin from every clause assigning it: values are direct, conditions conditional."""
    values = [v for _, v, _ in parts]
    texts = [v.text() for v in values]
    merged = combine(values, Transform.COPY, None)
    influences = set(merged.influences)
    for _, _, cond in parts:
        if cond is not None:
            influences |= as_influences(cond, Transform.CONDITIONAL)
    if len(set(texts)) == 1:
        return origin(merged.flows, influences, values[0].sql)
    flows: dict[Flow, Flow] = {}
    for (label, value, _), text in zip(parts, texts):
        for f in value.flows:
            flows.setdefault(f, Flow(f.source, f.transform, f.masking, f"{label}: {text or f.source.name}",
                                     f.guess))
    return Origin(frozenset(flows.values()), frozenset(influences), None, 1)  # each flow names its clause


def _first(node: Node, key: str) -> Node | None:
    trees = node.trees(key)
    return trees[0] if trees else None


def _restrict(walk: Walk, relation_attrs: Sequence[Attribute], targets: Sequence[Attribute]) -> None:
    """Forget the target's metadata columns (``_file``, ``_pos``...) the walk registered."""
    data = {a.expr_id for a in targets}
    extra = {a.expr_id for a in relation_attrs} - data
    for key in [k for k, a in walk.columns.items() if a.expr_id in extra]:
        del walk.columns[key]


# -- Delta Lake: MergeIntoCommand, UpdateCommand, DeleteCommand ----------------------------


def _parts(raw: object) -> list[str]:
    """Delta's ``targetColNameParts`` (printed ``[a, b]`` or a list) as names."""
    if isinstance(raw, str):
        inner = raw[1:-1] if raw.startswith("[") and raw.endswith("]") else raw
        return [p for p in inner.split(", ") if p]
    return [str(p) for p in raw] if isinstance(raw, (list, tuple)) else []


def delta_clause(node: Node, label: str) -> Clause:
    """A ``DeltaMergeInto...Clause``: its condition and ``DeltaMergeAction`` children."""
    assignments = []
    for action in node.children:
        if action.name == "DeltaMergeAction" and action.children:
            names = _parts(action.get("targetColNameParts"))
            if names:
                assignments.append((names[0], action.children[0]))
    return Clause(label, _first(node, "condition"), assignments, deletes="Delete" in node.name)


@handler("MergeIntoCommand")
def delta_merge(node: Node, walk: Walk) -> list[Attribute]:
    target = _first(node, "target")
    source = _first(node, "source")
    targets = walk.plan(target) if target is not None else []
    if source is not None:
        walk.plan(source)
    for cond in node.trees("condition"):
        walk.influences.extend(ordered_influences(walk.expression(cond), Transform.JOIN))
    clauses = [delta_clause(c, WHEN[key]) for key in ("matchedClauses", "notMatchedClauses",
                                                      "notMatchedBySourceClauses")
               for c in _trees_of(node.get(key))]
    return assign(walk, targets, clauses)


@handler("UpdateCommand")
def delta_update(node: Node, walk: Walk) -> list[Attribute]:
    target = _first(node, "target")
    targets = walk.plan(target) if target is not None else []
    values = _trees_of(node.get("updateExpressions"))
    clause = Clause("UPDATE", _first(node, "condition"),
                    [(a.name, v) for a, v in zip(targets, values)])
    return assign(walk, targets, [clause])


@handler("DeleteCommand")
def delta_delete(node: Node, walk: Walk) -> list[Attribute]:
    target = _first(node, "target")
    targets = walk.plan(target) if target is not None else []
    return assign(walk, targets, [Clause("DELETE", _first(node, "condition"), deletes=True)])


def _trees_of(value: object) -> list[Node]:
    """A field holding a list of trees (clauses, expressions) as nodes."""
    if isinstance(value, Node):
        return [value]
    if isinstance(value, tuple):
        return [v for v in value if isinstance(v, Node)]
    return []


# -- DataSource V2 (Iceberg and any SupportsRowLevelOperations table) ----------------------


@handler("MergeRows")
def merge_rows(node: Node, walk: Walk) -> list[Attribute]:
    """Walk the join under ``MergeRows`` (its ON condition is ``join``); the writing command
    above reads the instructions (:func:`rows_of`)."""
    children(node, walk)
    return attributes(node.trees("output"))


def _instruction_rows(instr: Node) -> list[tuple[Node, ...]] | None:
    """The output rows of one ``MergeRows`` instruction (None: it deletes)."""
    kind = instr.name.rsplit("$", 1)[-1]
    values = tuple(instr.children[1:])
    if kind == "Discard":
        return None
    if kind == "Split":  # an update as delete + insert: the inserted row carries the values
        half = len(values) // 2
        return [values[half:]]
    return [values]


def _operation(row: Sequence[Node], names: Sequence[str]) -> int | None:
    if OPERATION_COLUMN in names:
        value = row[names.index(OPERATION_COLUMN)]
        try:
            return int(value.get("value")) if value.name == "Literal" else None
        except (TypeError, ValueError):
            return None
    return None


def _row_clause(label: str, cond: Node | None, row: Sequence[Node] | None, names: Sequence[str],
                targets: Sequence[Attribute]) -> Clause:
    if row is None or _operation(row, names) == DELETE_OPERATION:
        return Clause(label, cond, deletes=True)
    assignments = []
    for a in targets:
        if a.name in names and names.index(a.name) < len(row):
            value = row[names.index(a.name)]
            assignments.append((a.name, _unwrap(value, a)))
    return Clause(label, cond, assignments)


def _unwrap(value: Node, target: Attribute) -> Node:
    """``If(p, new, column)`` (copy-on-write UPDATE) assigns ``new``; an alias its child."""
    if value.name == "Alias" and value.children:
        value = value.children[0]
    if value.name == "If" and len(value.children) == 3:
        other = value.children[2]
        if other.name == "AttributeReference" and other.expr_id == target.expr_id:
            return value.children[1]
    return value


def _passes_through(project: Node) -> bool:
    """A ``Project`` of plain columns plus a literal row operation (Spark 4's copy-on-write adds one
    above the rows it writes): the values are below it."""
    return all(i.name == "AttributeReference" or (i.name == "Alias" and i.get("name") == OPERATION_COLUMN)
               for i in project.trees("projectList"))


def _kept_unless(node: Node) -> Node | None:
    """``Filter(NOT(p <=> true))`` (the rows a copy-on-write DELETE keeps) as ``p``."""
    cond = _first(node, "condition")
    if cond is not None and cond.name == "Not" and cond.children and cond.children[0].name == "EqualNullSafe":
        return cond.children[0].children[0]
    return cond


def _is_true(cond: Node | None) -> bool:
    return cond is None or (cond.name == "Literal" and str(cond.get("value")).lower() == "true")


@handler("ReplaceData", "WriteDelta")
def row_level_write(node: Node, walk: Walk) -> list[Attribute]:
    table = _first(node, "table") or _first(node, "originalTable")
    targets = attributes(table.trees("output")) if table is not None else []
    child = node.children[0] if node.children else None
    if child is None:
        return []
    merge = next((n for n in child.walk() if n.name == "MergeRows"), None)
    if merge is not None:
        walk.plan(child)
        names = [a.name for a in attributes(merge.trees("output"))]
        clauses = []
        for key in ("matchedInstructions", "notMatchedInstructions", "notMatchedBySourceInstructions"):
            for instr in _trees_of(merge.get(key)):
                cond = instr.children[0] if instr.children else None
                cond = None if _is_true(cond) else cond
                rows = _instruction_rows(instr)
                for row in rows if rows is not None else [None]:
                    clauses.append(_row_clause(WHEN[key], cond, row, names, targets))
        out = assign(walk, targets, clauses)
    else:
        out = _update_or_delete(node, child, walk, targets)
    relation = next((n for n in child.walk() if n.name in ("DataSourceV2Relation", "DataSourceV2ScanRelation")
                     and {a.expr_id for a in attributes(n.trees("output"))} >= {t.expr_id for t in targets}), None)
    if relation is not None:
        _restrict(walk, attributes(relation.trees("output")), targets)
    return out


def _update_or_delete(node: Node, child: Node, walk: Walk, targets: Sequence[Attribute]) -> list[Attribute]:
    """UPDATE (values in a ``Project`` or ``Expand`` row) or DELETE (no values) on a V2 table."""
    leaf = next((n for n in child.walk() if not n.children), None)
    if leaf is not None:
        walk.plan(leaf)  # only the target: the WHERE condition is read below, by the rules
    cond = _first(node, "condition")
    rows: list[tuple[Sequence[str], Sequence[Node]]] = []
    for n in child.walk():
        if n.name == "Expand":
            names = [a.name for a in attributes(n.trees("output"))]
            rows += [(names, p) for p in n.get("projections") or () if isinstance(p, tuple)]
            break
        if n.name == "Filter" and cond is None:
            cond = _kept_unless(n)
        if n.name == "Project" and not _passes_through(n):
            items = n.trees("projectList")
            rows.append(([i.get("name") or "?" for i in items], items))
            break
    if cond is None:  # the UPDATE condition as the copy-on-write If's predicate
        cond = next((v.children[0].children[0] for _, row in rows for v in row
                     if v.name == "Alias" and v.children and v.children[0].name == "If"), None)
    clauses = [_row_clause("UPDATE", cond, row, names, targets) for names, row in rows]
    clauses = [c for c in clauses if not c.deletes]
    if not any(c.assignments for c in clauses):
        return assign(walk, targets, [Clause("DELETE", cond, deletes=True)])
    return assign(walk, targets, clauses)


__all__ = ["Clause", "assign"]
