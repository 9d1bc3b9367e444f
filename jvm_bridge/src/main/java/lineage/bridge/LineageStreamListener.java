package lineage.bridge;

import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;

/**
 * The class named in {@code spark.sql.streaming.streamingQueryListeners}: each
 * progressed micro-batch goes to the {@link Relay} like a query callback. On
 * start (Spark calls it on the stream's own thread, holding no lock of its own)
 * it relays the query object, before any query of the run's micro-batches, so
 * the worker can read the stream's plan for its foreachBatch writes, even once
 * the stream stopped; it notes the stream's session too, from which the first
 * progress event of a run takes the query object when the start could not.
 */
public final class LineageStreamListener extends StreamingQueryListener {
    private final Relay relay;
    private final Map<UUID, SparkSession> sessions = new ConcurrentHashMap<>();
    private final Set<UUID> seen = ConcurrentHashMap.newKeySet();

    public LineageStreamListener(SparkConf conf) {
        this.relay = Relay.acquire(conf);
    }

    public LineageStreamListener() {
        this(null);
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {
        try {  // a thread-local read
            scala.Option<SparkSession> session = SparkSession.getActiveSession();
            if (session.isDefined()) {
                sessions.put(event.runId(), session.get());
                StreamingQuery query = session.get().streams().get(event.id());
                if (query != null) {
                    relay.submit(lineage.bridge.Event.started(event.runId().toString(), query));
                }
            }
        } catch (RuntimeException e) {
            // capture must never break a stream: its plan is then read from its first progress
        }
    }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        UUID run = event.progress().runId();
        StreamingQuery query = null;
        SparkSession session = sessions.remove(run);
        if (session != null && seen.add(run)) {  // on the listener bus, never the stream's thread
            try {
                query = session.streams().get(event.progress().id());
            } catch (RuntimeException e) {
                query = null;
            }
        }
        relay.submit(lineage.bridge.Event.progress(event, query));
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {
        sessions.remove(event.runId());
    }
}
