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
    final StreamingQuery query;  // the stream, with its run's start or first progress; else null
    final String startedRun;  // a stream run that started (its id), else null

    Event(String funcName, QueryExecution qe, long durationNs, Exception exception) {
        this(funcName, qe, durationNs, exception, null, null, null);
    }

    private Event(String funcName, QueryExecution qe, long durationNs, Exception exception,
                  StreamingQueryListener.QueryProgressEvent progress, StreamingQuery query, String startedRun) {
        this.funcName = funcName;
        this.qe = qe;
        this.durationNs = durationNs;
        this.exception = exception;
        this.progress = progress;
        this.query = query;
        this.startedRun = startedRun;
    }

    static Event progress(StreamingQueryListener.QueryProgressEvent progress, StreamingQuery query) {
        return new Event("stream", null, 0L, null, progress, query, null);
    }

    /** A stream run started: relayed before any of its micro-batches' own queries (foreachBatch). */
    static Event started(String runId, StreamingQuery query) {
        return new Event("stream-start", null, 0L, null, null, query, runId);
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
        } else if (startedRun != null) {
            worker.onStreamStarted(startedRun, query);
        } else if (exception == null) {
            worker.onSuccess(funcName, qe, durationNs);
        } else {
            worker.onFailure(funcName, qe, exception);
        }
    }
}
