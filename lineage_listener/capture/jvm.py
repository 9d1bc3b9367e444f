"""Calls into the JVM through py4j: what a failed call raises, and Scala values as Python ones.

A call into the JVM fails with py4j's :class:`~py4j.protocol.Py4JError`, or, in a process where
PySpark started the ``SparkContext``, with one of PySpark's own exceptions: PySpark hooks py4j and
turns the JVM errors it knows (``AnalysisException``, ``UnsupportedOperationException``...) into
``pyspark.errors`` exceptions (Iceberg's ``Table.schema()`` on Spark 4.1 raises one). Readers of
facts catch :func:`jvm_call_failed` and read such a failure as "no fact".

>>> from py4j.protocol import Py4JError
>>> try:
...     raise Py4JError("gone")
... except jvm_call_failed():
...     print("no fact")
no fact
"""
from __future__ import annotations

import sys
from typing import Any

from py4j.clientserver import JavaClient
from py4j.java_gateway import ThreadSafeFinalizer
from py4j.protocol import Py4JError, smart_decode


def jvm_call_failed() -> tuple[type[Exception], ...]:
    """The exception types of a failed JVM call: py4j's, and PySpark's when PySpark is loaded.

    PySpark's conversion exists only where PySpark is imported (it installs its py4j hook with the
    ``SparkContext``), so the zero-code worker, which never imports PySpark, does not pay for
    importing it. Evaluated where an exception is matched (``except jvm_call_failed():``).

    >>> Py4JError in jvm_call_failed()
    True
    """
    captured = sys.modules.get("pyspark.errors.exceptions.captured")
    if captured is None:
        return (Py4JError,)
    return (Py4JError, captured.CapturedException)


def opt(option: Any) -> Any:
    """A Scala ``Option``'s value, or None (also when the call fails)."""
    try:
        return option.get() if option is not None and option.isDefined() else None
    except jvm_call_failed():
        return None


def seq(value: Any) -> list[Any]:
    """A Scala ``Seq`` as a list (empty when it cannot be read)."""
    try:
        return [value.apply(i) for i in range(value.length())]
    except jvm_call_failed():
        return []


_SEP = "\u001e"


def scala_map(m: Any) -> dict[str, str]:
    """A Scala ``Map[String, String]`` (or java Map) as a dict, in one py4j call.

    >>> scala_map(None)
    {}
    """
    if m is None:
        return {}
    try:
        text = str(m.mkString(_SEP))  # "k -> v<RS>k2 -> v2"
        return dict(pair.split(" -> ", 1) for pair in text.split(_SEP) if " -> " in pair)
    except jvm_call_failed():  # a java.util.Map (DSv2 options): py4j converts it
        try:
            return {str(k): str(v) for k, v in dict(m).items()}
        except (*jvm_call_failed(), TypeError, ValueError):
            return {}


def private_field(obj: Any, name: str) -> Any:
    """A private field of a JVM object (connectors keep their options there), or None."""
    try:
        f = obj.getClass().getDeclaredField(name)
        f.setAccessible(True)
        return f.get(obj)
    except jvm_call_failed():
        return None


def simple_name(obj: Any) -> str:
    """A JVM object's class name without its package (its superclass's for an anonymous class)."""
    cls = obj.getClass()
    return str(cls.getSimpleName()) or str(cls.getSuperclass().getSimpleName())


def static(client: Any, class_name: str, method: str) -> Any:
    """The static method ``method`` of the JVM class ``class_name``, callable in one round trip.

    ``jvm.java.util.Arrays.toString(...)`` first asks the JVM what ``java``, ``java.util`` and
    ``java.util.Arrays`` are, and what ``toString`` is (four more round trips); this asks nothing.
    """
    from py4j.java_gateway import JavaMember
    from py4j.protocol import STATIC_PREFIX

    return JavaMember(method, None, STATIC_PREFIX + class_name, client)


def declared_field(cls: Any, name: str, owner: str | None = None) -> Any:
    """The ``java.lang.reflect.Field`` ``name`` declared on the JVM class ``owner`` (``cls`` or one of its
    superclasses, by name; ``cls`` itself when None), made accessible; None when ``cls`` has no such
    superclass. A class that does not declare ``name`` fails as any JVM call does.

    A round trip per class passed on the way up and three more: asking each class for ``name`` would
    cost a Java exception on every class that lacks it, and PySpark's conversion of each, tens of
    round trips.
    """
    while owner is not None and cls is not None and str(cls.getName()) != owner:
        cls = cls.getSuperclass()
    if cls is None:
        return None
    field = cls.getDeclaredField(name)
    field.setAccessible(True)
    return field


def release(*objects: Any) -> None:
    """Tell the JVM this process is done with ``objects``, now and on this thread: py4j drops its
    reference to each, so the JVM may collect it (anything else, e.g. ``None`` or a string, is left
    alone). One JVM round trip per object.

    py4j drops its reference when the Python object is collected, and a py4j object is collected only
    by Python's cycle collector once it was asked anything or passed to a JVM call (py4j caches a
    member object on it that points back to it), seconds later or more. Even a py4j object let go
    of at once is dropped only by py4j's finalizer thread, which looks at its queue once a second.
    A ``QueryExecution`` held that long keeps its plans in the JVM's heap through the young
    collections in between, and the JVM's collector copies and marks them
    (``docs/performance.md``).

    >>> release(None, "not a JVM object")

    If the JVM cannot be told (a closed gateway), py4j's finalizer still drops the object later:

    >>> class Client:
    ...     address, port = "127.0.0.1", 1
    ...     def garbage_collect_object(self, target_id):
    ...         raise OSError("gateway closed")
    >>> class Held:
    ...     _gateway_client, _target_id = Client(), "o1"
    ...     def _detach(self): ...
    >>> ThreadSafeFinalizer.add_finalizer("127.0.0.11o1", "its finalizer")
    >>> release(Held())
    >>> ThreadSafeFinalizer.finalizers.pop("127.0.0.11o1")
    'its finalizer'
    """
    for obj in objects:
        if getattr(type(obj), "_detach", None) is None:  # on the class: a JavaObject's own getattr asks the JVM
            continue
        try:
            _forget(obj._gateway_client, obj._target_id)
        except Exception:  # noqa: BLE001 - releasing never fails capture (py4j's finalizer frees it later)
            pass


def _forget(client: Any, target_id: str) -> None:
    """What py4j does when a JavaObject is collected (``java_gateway._garbage_collect_object``), but
    the JVM is told now rather than by py4j's finalizer thread: the memory command is sent on this
    thread's connection, then the object's finalizer removed (not dropped twice; kept if the
    command failed, so py4j still drops it later)."""
    if isinstance(client, JavaClient):  # PySpark's pinned-thread mode: its default queues the command
        client.garbage_collect_object(target_id, enqueue=False)
    else:  # a GatewayClient sends it at once
        client.garbage_collect_object(target_id)
    ThreadSafeFinalizer.remove_finalizer(smart_decode(client.address) + smart_decode(client.port) + target_id)


def jvm_proxy(spark: Any, listener: Any) -> Any:
    """The JVM object py4j makes of the Python ``listener`` (one JVM call: the static method is
    called as such, without asking the JVM what ``requireNonNull`` is). py4j makes a new one each
    time a Python object is passed: only the one registered can be unregistered."""
    client = spark._jsparkSession._gateway_client
    return static(client, "java.util.Objects", "requireNonNull")(listener)
