"""Recording what was read: from an envelope to store rows.

The recorder (:mod:`.records`) walks an envelope's plan and returns its rows; :mod:`.wrappers`
decides the CTAS / ``saveAsTable`` fold; :mod:`.spark_labels` reads the labels Spark keeps on
columns; :mod:`.overflow` records an action a full capture queue could not hold. Nothing here
calls the JVM: what had to be read from it is in the envelope.
"""
