"""The Python functions of a plan read with ``toJSON``: their pickled commands, read by py4j.

``toJSON`` writes a ``PythonUDF``'s (or ``PythonUDTF``'s) ``func`` as null; the walk reads the
function from its pickled command (:mod:`lineage_listener.pycode`), so each such node is found on
the JVM plan at the same place and its ``PythonFunction.command`` is patched in, as the bridge
jar's ``PlanReader`` writes it (``{"command": base64, "pythonVer": ...}``). A function that cannot
be read stays null: the walk then keeps every input, marked as a guess.
"""
from __future__ import annotations

import base64
from typing import Any

from lineage_listener import redact
from lineage_listener.capture.jvm import jvm_call_failed
from lineage_listener.capture.reading.nullfields import _follow, path_to
from lineage_listener.plan.scan import dicts

log = redact.logger(__name__)

#: Expressions holding a ``PythonFunction`` in their ``func`` field.
PYTHON_FUNCTIONS = ("PythonUDF", "PythonUDTF", "PythonUDAF")


def present(text: str | None) -> bool:
    """Whether a plan's text may hold a Python function (a cheap test before walking its items)."""
    return bool(text) and any(f".{name}\"" in text for name in PYTHON_FUNCTIONS)  # type: ignore[operator]


def _unread(items: Any) -> list[dict[str, Any]]:
    return [d for d in dicts(items)
            if str(d.get("class", "")).rsplit(".", 1)[-1] in PYTHON_FUNCTIONS and d.get("func") is None]


def command_bytes(seq: Any) -> bytes:
    """A Scala ``Seq[Byte]`` as bytes (one py4j call: its wrapped array on Scala 2.13 or 2.12)."""
    for getter in ("unsafeArray", "array"):
        try:
            return bytes(getattr(seq, getter)())
        except jvm_call_failed():
            continue
    raise ValueError("the command is not a wrapped byte array")


def function(fn: Any) -> dict[str, Any]:
    """``{"command": base64, "pythonVer": ...}`` of a JVM ``PythonFunction``."""
    out: dict[str, Any] = {"command": base64.b64encode(command_bytes(fn.command())).decode("ascii")}
    try:
        out["pythonVer"] = str(fn.pythonVer())
    except jvm_call_failed():
        pass
    return out


def repair(plan: Any, items: Any) -> int:
    """Patch the command of every Python function of ``items`` (``toJSON`` items of the JVM plan
    ``plan``) in place; the number patched."""
    done = 0
    for node in _unread(items):
        steps = path_to(items, node)
        if steps is None:
            continue
        try:
            node["func"] = function(_follow(plan, steps).func())
            done += 1
        except (*jvm_call_failed(), ValueError) as exc:
            log.debug("could not read a Python function's command: %s", exc)
    return done
