package lineage.bridge;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;

/** One listener callback waiting to be relayed. Holding it keeps {@code qe} alive. */
final class Event {
    final String funcName;
    final QueryExecution qe;
    final long durationNs;
    final Exception exception;  // null for a success
    final StreamingQueryListener.QueryProgressEvent progress;  // a streaming micro-batch, else null
    final StreamingQuery query;  // the stream, with the first progress of its run; else null

    Event(String funcName, QueryExecution qe, long durationNs, Exception exception) {
        this(funcName, qe, durationNs, exception, null, null);
    }

    private Event(String funcName, QueryExecution qe, long durationNs, Exception exception,
                  StreamingQueryListener.QueryProgressEvent progress, StreamingQuery query) {
        this.funcName = funcName;
        this.qe = qe;
        this.durationNs = durationNs;
        this.exception = exception;
        this.progress = progress;
        this.query = query;
    }

    static Event progress(StreamingQueryListener.QueryProgressEvent progress, StreamingQuery query) {
        return new Event("stream", null, 0L, null, progress, query);
    }

    /** The application's context, when this event can tell it (null otherwise). */
    SparkContext sparkContext() {
        if (qe != null) {
            return qe.sparkSession().sparkContext();
        }
        return query != null ? query.sparkSession().sparkContext() : null;
    }

    void deliverTo(Worker worker) {
        if (progress != null) {
            worker.onStreamProgress(progress, query);
        } else if (exception == null) {
            worker.onSuccess(funcName, qe, durationNs);
        } else {
            worker.onFailure(funcName, qe, exception);
        }
    }
}
