"""The capture thread's py4j connection sends big replies without Nagle's 40 ms stalls."""
from __future__ import annotations

import threading

from lineage_listener.capture.reading import nodelay


def _jvm_sockets(spark):
    """(port, TCP_NODELAY) of every JVM-side py4j connection socket."""
    server_field = spark._jvm.java.lang.Class.forName("py4j.GatewayServer").getDeclaredField("connections")
    server_field.setAccessible(True)
    server = spark.sparkContext._gateway.java_gateway_server
    out = {}
    for conn in server_field.get(server).toArray():  # indexed: iterating would end in a Java exception
        out[conn.getClass().getName() + str(id(conn))] = nodelay._declared_field(conn, "socket")
    return {s.getPort(): s.getTcpNoDelay() for s in out.values()}


def test_only_the_calling_threads_socket_is_changed(spark, java_exceptions):
    jobj = spark._jsparkSession
    result: dict[str, object] = {}
    before = _jvm_sockets(spark)  # an earlier test's capture on this thread may have changed its socket

    def capture_thread() -> None:
        jobj.version()  # this thread's own py4j connection now exists
        result["ports"] = nodelay._local_ports(jobj._gateway_client)
        result["first"] = nodelay.disable_nagle(jobj)
        result["second"] = nodelay.disable_nagle(jobj)

    t = threading.Thread(target=capture_thread)
    t.start()
    t.join(60)
    assert java_exceptions == []  # no lookup that fails on the JVM side, no iterator run to its end
    sockets = _jvm_sockets(spark)
    ours = result["ports"]
    assert ours and all(sockets[p] for p in ours if p in sockets)
    assert result["first"] >= 1 and result["second"] == 0  # set once, then nothing left to change
    others = (nodelay._local_ports(jobj._gateway_client) - ours) & before.keys() & sockets.keys()
    assert others  # this (test) thread's connection, at least
    assert {p: sockets[p] for p in others} == {p: before[p] for p in others}


def test_a_foreign_object_changes_nothing_and_does_not_raise():
    assert nodelay.disable_nagle(object()) == 0
