package lineage.bridge;

import org.apache.spark.sql.execution.QueryExecution;

/** One listener callback waiting to be relayed. Holding it keeps {@code qe} alive. */
final class Event {
    final String funcName;
    final QueryExecution qe;
    final long durationNs;
    final Exception exception;  // null for a success

    Event(String funcName, QueryExecution qe, long durationNs, Exception exception) {
        this.funcName = funcName;
        this.qe = qe;
        this.durationNs = durationNs;
        this.exception = exception;
    }

    void deliverTo(Worker worker) {
        if (exception == null) {
            worker.onSuccess(funcName, qe, durationNs);
        } else {
            worker.onFailure(funcName, qe, exception);
        }
    }
}
