package lineage.bridge;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;

/**
 * Drains the relay when the application ends. It runs on the listener bus,
 * after every query event posted before it, and blocks there until the worker
 * has read them (at most {@code spark.lineage.drainTimeoutMs}), while the context
 * is still alive. Writing them to the store overlaps Spark's own shutdown; the
 * relay's JVM shutdown hook keeps the driver alive until they are stored.
 */
final class AppEndListener extends SparkListener {
    private final Relay relay;

    AppEndListener(Relay relay) {
        this.relay = relay;
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
        relay.closeAtApplicationEnd();
    }
}
