package lineage.bridge;

import org.apache.spark.sql.execution.QueryExecution;

/**
 * What the Python worker implements (a py4j proxy). Every method is called
 * from the bridge's own relay thread, one call at a time; a call that returns
 * normally acknowledges the event.
 */
public interface Worker {
    /** A query succeeded. Read what is needed from {@code qe} before returning. */
    void onSuccess(String funcName, QueryExecution qe, long durationNs);

    /** A query failed. */
    void onFailure(String funcName, QueryExecution qe, Exception exception);

    /** A stream run started ({@code query}: the stream): its foreachBatch writes may come before its progress. */
    void onStreamStarted(String runId, Object query);

    /** A streaming micro-batch progressed; {@code query} is the stream with its run's first batch, else null. */
    void onStreamProgress(Object progressEvent, Object query);

    /** Wait until everything received so far is in the store (or spooled); true on success. */
    boolean flush(long timeoutMs);

    /** The Spark application {@code appId} ended: mark its run as ended. */
    void endRun(String appId);

    /** Release the store and exit; the bridge stops calling after this. */
    void shutdown();
}
