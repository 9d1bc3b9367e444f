package lineage.bridge;

import org.apache.spark.SparkConf;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.util.QueryExecutionListener;

/**
 * The class named in {@code spark.sql.queryExecutionListeners}. A thin
 * adapter: it hands each callback to the JVM-wide {@link Relay} and returns
 * at once, so Spark's listener bus is never blocked.
 */
public final class LineageBridgeListener implements QueryExecutionListener {
    private final Relay relay;

    public LineageBridgeListener(SparkConf conf) {
        this.relay = Relay.acquire(conf);
    }

    public LineageBridgeListener() {
        this(null);
    }

    @Override
    public void onSuccess(String funcName, QueryExecution qe, long durationNs) {
        relay.submit(new Event(funcName, qe, durationNs, null));
    }

    @Override
    public void onFailure(String funcName, QueryExecution qe, Exception exception) {
        relay.submit(new Event(funcName, qe, 0L, exception));
    }
}
