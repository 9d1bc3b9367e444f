"""OpenLineage out and in: the store's queries as ``RunEvent``s with the ``columnLineage`` facet.

``naming`` maps dataset names both ways, ``facets`` maps edges both ways, ``events``
builds events from the store, ``send`` delivers them (file or HTTP, recording what an
endpoint received), ``ingest`` writes any producer's events into a store. Requires the
``openlineage`` extra (``pip install lineage-listener[openlineage]``).
"""
