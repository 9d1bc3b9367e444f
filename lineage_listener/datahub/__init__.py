"""DataHub out: per target dataset, ``upstreamLineage`` with ``fineGrainedLineages`` and ``schemaMetadata``.

``urns`` names datasets and fields the DataHub way; ``export`` builds the
MetadataChangeProposals with the ``acryl-datahub`` SDK (``pip install
lineage-listener[datahub]``) and writes them as a file DataHub's file source reads.
"""
