"""Kafka as the road between capture and the lineage servers (the ``[kafka]`` extra).

:mod:`~lineage_listener.kafka.settings` reads where to go (conf keys, ``enable(kafka=...)``,
the bridge's environment); :mod:`~lineage_listener.kafka.messages` turns a captured batch into
OpenLineage RunEvents, one per query, keyed by the Spark application, and back;
:mod:`~lineage_listener.kafka.publish` is capture's writer for a topic (bounded buffer, local spool,
replay); :mod:`~lineage_listener.kafka.consume` feeds a topic into a store through the lineage
server's group-commit writer, committing offsets only after the store has committed.
"""
