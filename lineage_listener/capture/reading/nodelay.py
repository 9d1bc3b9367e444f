"""Turn off Nagle's algorithm on the JVM end of the capture thread's py4j connection.

Measured (PySpark 4.3, Java 17, loopback): py4j's Java side writes a reply in 8 KB
chunks on a socket with Nagle's algorithm on, and the Python side ACKs late
(delayed ACK), so any reply over 8 KB (most analyzed plans' ``toJSON``) waits
about 40 ms for nothing: a 65 KB string took 46 ms, and 5 ms with ``TCP_NODELAY``.
py4j has no option for it, so the capture thread sets it by reflection on the
``Socket`` of its own connection (found by its port), once, in a few round trips that raise
nothing on the JVM side (:func:`~lineage_listener.capture.jvm.declared_field`). Anything unexpected
(another py4j, a security manager) leaves the connection as it was, with a debug line.
"""
from __future__ import annotations

import logging
from typing import Any

from lineage_listener.capture.jvm import declared_field, jvm_call_failed

log = logging.getLogger(__name__)

#: The py4j class that declares the server's ``connections`` (its ``ClientServer`` runs a subclass).
SERVER = "py4j.GatewayServer"


def _local_ports(client: Any) -> set[int]:
    """Local ports of the Python ends of ``client``'s connections usable by this thread."""
    local = getattr(client, "thread_connection", None)
    if local is not None:  # py4j clientserver (PySpark's pinned threads): this thread's own
        ref = getattr(local, "connection", None)
        conns = [ref() if callable(ref) else ref]
    else:  # classic GatewayClient: a pool any thread may take from
        conns = list(getattr(client, "deque", ()) or ())
    sockets = [getattr(conn, "socket", None) for conn in conns if conn is not None]
    ports = set()
    for sock in sockets:
        try:
            ports.add(sock.getsockname()[1])
        except (AttributeError, OSError, IndexError, TypeError):
            continue
    return ports


def _declared_field(obj: Any, name: str, owner: str | None = None) -> Any:
    """``obj``'s field ``name``, declared on its class or on its superclass ``owner``."""
    field = declared_field(obj.getClass(), name, owner)
    if field is None:
        raise LookupError(name)
    return field.get(obj)


def disable_nagle(java_object: Any) -> int:
    """Set ``TCP_NODELAY`` on the JVM sockets serving this thread's py4j connections.

    ``java_object`` is any py4j ``JavaObject`` (its gateway client is used). Returns how
    many sockets were changed; never raises.
    """
    try:
        from py4j.java_gateway import JavaObject
        from py4j.protocol import GATEWAY_SERVER_OBJECT_ID

        client = java_object._gateway_client
        ports = _local_ports(client)
        if not ports:
            return 0
        server = JavaObject(GATEWAY_SERVER_OBJECT_ID, client)
        connections = _declared_field(server, "connections", SERVER).toArray()  # a snapshot: connections come and go
        socket_field = None
        changed = 0
        for i in range(len(connections)):  # by index: a py4j iterator ends with a Java exception
            connection = connections[i]
            if socket_field is None:  # one class serves every connection of a server, and declares it
                socket_field = declared_field(connection.getClass(), "socket")
            sock = socket_field.get(connection)
            if sock.getPort() in ports and not sock.getTcpNoDelay():
                sock.setTcpNoDelay(True)
                changed += 1
        return changed
    except (*jvm_call_failed(), LookupError, AttributeError, ImportError, TypeError) as exc:
        log.debug("lineage-listener: py4j socket left with Nagle's algorithm on: %s", exc)
        return 0
