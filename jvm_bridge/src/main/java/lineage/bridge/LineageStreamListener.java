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
 * start (Spark calls it on the stream's own thread) it only takes the query
 * object, one map lookup, so the worker can read the stream's plan even after
 * a short stream ended; progress events arrive on the listener bus and are
 * queued at once.
 */
public final class LineageStreamListener extends StreamingQueryListener {
    private final Relay relay;
    private final Map<UUID, StreamingQuery> started = new ConcurrentHashMap<>();
    private final Set<UUID> seen = ConcurrentHashMap.newKeySet();

    public LineageStreamListener(SparkConf conf) {
        this.relay = Relay.acquire(conf);
    }

    public LineageStreamListener() {
        this(null);
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {
        try {
            scala.Option<SparkSession> session = SparkSession.getActiveSession();
            if (session.isDefined()) {
                StreamingQuery query = session.get().streams().get(event.id());
                if (query != null) {
                    started.put(event.runId(), query);
                }
            }
        } catch (RuntimeException e) {
            // capture must never break a stream: its plan is then not read
        }
    }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        UUID run = event.progress().runId();
        StreamingQuery query = seen.add(run) ? started.remove(run) : null;
        relay.submit(lineage.bridge.Event.progress(event, query));
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {
        started.remove(event.runId());
    }
}
