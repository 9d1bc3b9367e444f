package lineage.bridge;

/** The py4j entry point the Python worker sees as {@code gateway.entry_point}. */
public final class EntryPoint {
    private final Relay relay;

    EntryPoint(Relay relay) {
        this.relay = relay;
    }

    /**
     * Called by the worker once it is ready: {@code callbackPort} is its py4j
     * callback server on 127.0.0.1, {@code worker} the object to relay to.
     */
    public void attach(int callbackPort, Worker worker) {
        relay.attach(callbackPort, worker);
    }

    /** A Spark conf value as the driver sees it, e.g. {@code spark.lineage.store}. */
    public String getConf(String key, String defaultValue) {
        return relay.conf(key, defaultValue);
    }
}
