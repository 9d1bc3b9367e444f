package lineage.bridge;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerApplicationEnd;

/**
 * Drains the relay when the application ends. It runs on the listener bus,
 * after every query event posted before it, and blocks there at most
 * {@code spark.lineage.drainTimeoutMs}: that is what keeps the driver alive
 * until captured lineage is in the store.
 */
final class AppEndListener extends SparkListener {
    private final Relay relay;

    AppEndListener(Relay relay) {
        this.relay = relay;
    }

    @Override
    public void onApplicationEnd(SparkListenerApplicationEnd end) {
        relay.close("application end");
    }
}
