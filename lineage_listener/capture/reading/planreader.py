"""Reading the analyzed plan: the bridge jar's compact ``PlanReader`` when the driver has it, else ``toJSON``.

With the compact reader, a query costs two JVM calls: :func:`head` (what decides whether
its plan is read: application, id, root node, SQL text) and :func:`read_query` (the plan
with the facts of its leaves and write target, :mod:`~lineage_listener.plan.compact`).

The zero-code bridge runs inside a JVM that loaded the bridge jar: ``PlanReader`` is
found by name. In process, :func:`install` (called by ``enable(spark)``) gives the jar's
path; the first read loads it in a child class loader of Spark's. When neither works,
plans are read with ``toJSON`` (one log line says why). A plan the compact reader cannot
encode is read with ``toJSON`` too, and the envelope says so (a ``capture_errors`` row).

>>> from lineage_listener.capture.reading import planreader
>>> planreader.install(None)                        # doctest: +SKIP
"""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from py4j.java_gateway import JavaClass

from lineage_listener.capture import stages
from lineage_listener.capture.jvm import jvm_call_failed, static
from lineage_listener.plan import compact
from lineage_listener.plan.classes import EXPRESSION_FIELDS, SOURCE_LEAVES
from lineage_listener.plan.tree import Plan, from_compact

log = logging.getLogger(__name__)

CLASS = "lineage.bridge.PlanReader"
#: Its class file, as a class loader finds it.
RESOURCE = CLASS.replace(".", "/") + ".class"
#: ``LINEAGE_PLAN_READER=json`` reads every plan with ``toJSON`` (the way back; benchmarks compare
#: both); unset or ``compact``: the compact reader where the driver has it.
ENV = "LINEAGE_PLAN_READER"
#: Values of :data:`ENV` that turn the compact reader off.
OFF = frozenset({"json", "tojson"})

_lock = threading.Lock()
_jar: Path | None = None
#: id(gateway client) -> its JVM's PlanReader, or False: unavailable. A reader once loaded stays for
#: good, whatever jar is installed later: py4j caches methods by class name, so the class loaded
#: again by a new class loader could not be called (``object is not an instance of declaring class``).
_readers: dict[int, Any] = {}
_logged: set[str] = set()
_building = threading.Event()  # a background build of the jar is under way


def install(jar: str | os.PathLike | None) -> None:
    """Use the bridge jar at ``jar`` for in-process capture (loaded on the first read; a JVM that
    loaded a reader already keeps it)."""
    global _jar
    with _lock:
        _jar = Path(jar) if jar else None
        for key in [k for k, v in _readers.items() if v is False]:  # what failed is tried again
            del _readers[key]


def install_default(background: bool = True) -> None:
    """Find (or build, in a background thread: javac can take seconds) the bridge jar and install it."""
    from lineage_listener import jar as bridge

    def find() -> None:
        try:
            install(bridge.bridge_jar())
        except Exception as exc:  # noqa: BLE001 - no jar: plans are read with toJSON
            _once("nojar", "lineage-listener: no bridge jar (%s): plans are read with toJSON", exc)

    if not enabled():
        return
    try:
        shipped = bridge.SHIPPED if bridge.SHIPPED.is_file() else bridge.jar_path()
    except Exception:  # noqa: BLE001
        shipped = None
    if shipped is not None and shipped.is_file():
        install(shipped)
    elif not background:
        find()
    elif not _building.is_set():  # one build at a time, whatever the number of enable() calls
        _building.set()

        def build() -> None:
            try:
                find()
            finally:
                _building.clear()
        threading.Thread(target=build, name="lineage-listener-jar", daemon=True).start()


def warm_up(session: Any) -> bool:
    """Load the ``PlanReader`` for the JVM of ``session`` (a JVM ``SparkSession``) before the first
    read needs it; True if plans will be read with it.

    Spark's classes share one class loader, so the session finds the reader the plans will use.

    >>> warm_up(spark._jsparkSession)                   # doctest: +SKIP
    True
    """
    return enabled() and reader_for(session) is not None


def enabled() -> bool:
    """The default; ``LINEAGE_PLAN_READER=json`` reads plans with ``toJSON`` instead."""
    return os.environ.get(ENV, "compact").strip().lower() not in OFF


def _once(key: str, message: str, *args: Any, level: int = logging.WARNING) -> None:
    if key not in _logged:
        _logged.add(key)
        log.log(level, message, *args)


def reader_for(plan: Any) -> Any:
    """The JVM ``PlanReader`` for the JVM of ``plan``, or None (then: toJSON)."""
    client = plan._gateway_client
    key = id(client)
    found = _readers.get(key)
    if found is not None:
        return found or None
    with _lock:
        found = _readers.get(key)
        if found is None:
            found = _load(plan, client) or False
            _readers[key] = found  # a failure is tried again after the next install()
    return found or None


def _load(plan: Any, client: Any) -> Any:
    """The ``PlanReader`` of the JVM of ``plan``: one the JVM has on a class path (the zero-code bridge,
    ``--jars``), else one loaded from the installed jar; None when neither is there.

    Asked by resource, so that a class path without the reader answers null, not a Java exception
    (each costs PySpark's conversion of it, tens of round trips): ~30 round trips in all.
    """
    spark_loader = plan.getClass().getClassLoader()
    context_loader = static(client, "java.lang.Thread", "currentThread")().getContextClassLoader()
    for loader in (context_loader, spark_loader):
        try:
            if loader is None or loader.getResource(RESOURCE) is None:
                continue
            cls = loader.loadClass(CLASS)
        except jvm_call_failed():
            continue
        made = _instance(cls)
        if made is not None:
            log.info("lineage-listener: plans are read by the compact PlanReader on the JVM's class path")
            return made
    if _jar is None:
        if _building.is_set():  # tried again once the build installs it; its failure logs its reason
            _once("building", "lineage-listener: the bridge jar is still being built: plans are read with "
                  "toJSON until it is ready", level=logging.INFO)
            return None
        _once("nojar", "lineage-listener: no compact plan reader in this JVM (enable() did not find the "
              "bridge jar): plans are read with toJSON")
        return None
    try:
        url_class = JavaClass("java.net.URL", client)._java_lang_class
        urls = static(client, "java.lang.reflect.Array", "newInstance")(url_class, 1)
        urls[0] = JavaClass("java.io.File", client)(str(_jar)).toURI().toURL()
        loader = JavaClass("java.net.URLClassLoader", client)(urls, spark_loader)
        made = _instance(loader.loadClass(CLASS))
    except jvm_call_failed() as exc:
        _once("load", "lineage-listener: cannot load the compact plan reader from %s (%s): plans are "
              "read with toJSON", _jar, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return None
    if made is not None:
        log.info("lineage-listener: plans are read by the compact PlanReader of %s", _jar)
    else:
        _once("version", "lineage-listener: the bridge jar %s has another PlanReader version: plans are "
              "read with toJSON", _jar)
    return made


def _instance(cls: Any) -> Any:
    """A ``PlanReader`` of this decoder's version, told what to trim and which leaves to describe."""
    try:
        if int(cls.getField("VERSION").getInt(None)) != compact.VERSION:
            return None
        reader = cls.newInstance()
        for name, fields in compact.KEEP.items():
            reader.keep(name, ",".join(fields))
        reader.sourceLeaves(",".join(sorted(SOURCE_LEAVES)))
        for name, fields in EXPRESSION_FIELDS.items():
            reader.watchNulls(name, ",".join(fields))
        return reader
    except jvm_call_failed():
        return None


def head(qe: Any) -> dict[str, Any] | None:
    """``{"app", "qe", "root", "sql"}`` of a ``QueryExecution`` in one JVM call (``"error"`` instead
    of ``"root"`` when its analysis failed), or None without a compact reader (then: py4j calls)."""
    reader = reader_for(qe) if enabled() else None
    if reader is None:
        return None
    try:
        with stages.timed("head"):
            found = json.loads(str(reader.head(qe)))
    except (*jvm_call_failed(), ValueError) as exc:
        _once("head", "lineage-listener: the compact plan reader could not read a query's head (%s): read "
              "with py4j calls", (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300])
        return None
    return found if isinstance(found, dict) else None


def read_target(qe: Any) -> dict[str, Any] | None:
    """The write target's facts of ``qe`` in one JVM call, or None (read them with py4j calls)."""
    reader = reader_for(qe) if enabled() else None
    if reader is None:
        return None
    try:
        found = json.loads(str(reader.targetOf(qe)))
    except (*jvm_call_failed(), ValueError):
        return None
    return found if isinstance(found, dict) else None


@dataclass
class QueryRead:
    """A query's plan and what was read with it (:func:`read_query`)."""

    plan: Plan
    #: Facts of source leaves by first output id, as the JVM side read them (None: toJSON was used).
    leaves: dict[int, dict[str, Any]] | None = None
    #: Source leaves the JVM side did not describe (read with py4j calls, :mod:`~lineage_listener.capture.reading.facts`).
    unresolved: set[int] = field(default_factory=set)
    #: Fields of :data:`~lineage_listener.plan.classes.EXPRESSION_FIELDS` written as null (to read
    #: from the JVM objects), or None: not counted.
    nulls: int | None = None
    #: The write target's facts, when the JVM side read them.
    target: dict[str, Any] | None = None
    fallback: str | None = None
    #: What Spark measured running the query (:mod:`~lineage_listener.capture.statistics`), when read.
    statistics: dict[str, Any] | None = None

    @property
    def text(self) -> str:
        return self.plan.text or ""


def read_query(qe: Any, target: bool) -> QueryRead | None:
    """The analyzed plan of ``qe`` with its leaf (and, if ``target``, write-target) facts, in one
    JVM call; None without a compact reader. A plan it cannot encode is read with ``toJSON``
    (``leaves`` None, ``fallback`` says why)."""
    reader = reader_for(qe) if enabled() else None
    if reader is None:
        return None
    try:
        with stages.timed("compact.read+transfer"):
            text = str(reader.encodeQuery(qe, target))
        with stages.timed("compact.decode"):
            raw, facts = compact.load(text)
        with stages.timed("compact.tree"):
            if facts.get("nulls"):  # the fact readers patch the items, and the walk reads the patch
                plan = Plan(text, items=compact.expand(raw))
            else:
                plan = Plan(text, root=from_compact(raw))
    except (*jvm_call_failed(), ValueError, KeyError, IndexError, TypeError) as exc:
        fallback = _failed(exc)
        with stages.timed("tojson+transfer"):
            text = str(qe.analyzed().toJSON())
        with stages.timed("decode"):
            return QueryRead(Plan(text, items=json.loads(text)), fallback=fallback)
    leaves: dict[int, dict[str, Any]] = {}
    unresolved: set[int] = set()
    for eid, fact in facts.get("leaves", ()):
        if fact is None:
            unresolved.add(int(eid))
        else:
            leaves[int(eid)] = fact
    return QueryRead(plan, leaves, unresolved, int(facts.get("nulls", 0)), facts.get("target"),
                     statistics=facts.get("statistics"))


def _failed(exc: BaseException) -> str:
    """The fallback's reason (logged once per kind of failure)."""
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
    fallback = f"compact plan reader failed ({type(exc).__name__}: {first}): read with toJSON"
    _once("fail:" + first[:80], "lineage-listener: %s", fallback)
    if stages.enabled():
        stages.add("compact.fallback", 0.0)
    return fallback


def read(plan: Any) -> tuple[str, list[dict[str, Any]], str | None]:
    """``(text, items, fallback)``: the plan's text, its decoded ``toJSON``-shaped items, and
    why the compact reader was not used for a plan it failed on (None otherwise)."""
    reader = reader_for(plan) if enabled() else None
    fallback = None
    if reader is not None:
        try:
            with stages.timed("compact.read+transfer"):
                text = str(reader.encode(plan))
            with stages.timed("compact.decode"):
                return text, compact.expand(text), None
        except (*jvm_call_failed(), ValueError, KeyError, IndexError, TypeError) as exc:
            fallback = _failed(exc)
    with stages.timed("tojson+transfer"):
        text = str(plan.toJSON())
    with stages.timed("decode"):
        items = json.loads(text)
    return text, items, fallback
