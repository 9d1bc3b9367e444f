"""Reading a query while Spark holds it: from a live ``QueryExecution`` to an envelope.

The query reader (:mod:`.queryreader`) reads the query's head, drops what carries no lineage of
the user's (:mod:`.skips`), then reads its plan (:mod:`.planreader`) and the facts of its leaves
and write target (:mod:`.facts`, through the fact readers of :mod:`.readers`). A stream's plan is
read once per run (:mod:`.streams`). Nothing here walks a plan for its lineage or makes a row: the envelope goes
to :mod:`lineage_listener.capture.recording`.
"""
