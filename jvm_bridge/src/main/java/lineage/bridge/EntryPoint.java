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

    /**
     * The worker's heartbeat, from its own thread: {@code workerId} is its {@code LINEAGE_BRIDGE_WORKER_ID},
     * {@code pid} its own process id (whose CPU time the bridge watches too).
     */
    public void heartbeat(String workerId, int pid) {
        relay.heartbeat(workerId, pid);
    }

    /** A Spark conf value as the driver sees it, e.g. {@code spark.lineage.store}. */
    public String getConf(String key, String defaultValue) {
        return relay.conf(key, defaultValue);
    }
}
