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
 * start (Spark calls it on the stream's own thread) it only notes the stream's
 * session; the first progress event of a run (on the listener bus) takes the
 * query object from it, so the worker can read the stream's plan later.
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
        try {  // a thread-local read: nothing here may wait on a lock the starting thread holds
            scala.Option<SparkSession> session = SparkSession.getActiveSession();
            if (session.isDefined()) {
                sessions.put(event.runId(), session.get());
            }
        } catch (RuntimeException e) {
            // capture must never break a stream: its plan is then not read
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
