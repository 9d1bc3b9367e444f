package lineage.bridge;

import java.net.InetAddress;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import javax.net.SocketFactory;
import py4j.CallbackClient;
import py4j.Py4JPythonClient;

/**
 * py4j's callback client, minus its one non-daemon thread. The stock client
 * runs its idle-connection cleaner on a default (non-daemon) pool thread; in a
 * JVM job that never calls {@code System.exit} or {@code spark.stop()} that
 * thread alone would keep the driver alive forever. This one cleans up on a
 * shared daemon thread instead.
 */
final class DaemonCallbackClient extends CallbackClient {
    private static final ScheduledExecutorService CLEANER = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lineage-bridge-py4j-cleaner");
        t.setDaemon(true);
        return t;
    });

    private ScheduledFuture<?> cleanup;  // set from the super constructor: no initializer on purpose

    DaemonCallbackClient(int port, InetAddress address, String authToken) {
        super(port, address, authToken, DEFAULT_MIN_CONNECTION_TIME, DEFAULT_MIN_CONNECTION_TIME_UNIT,
            SocketFactory.getDefault(), true, 0);
    }

    @Override
    protected void setupCleaner() {
        if (minConnectionTime > 0) {
            cleanup = CLEANER.scheduleAtFixedRate(this::periodicCleanup, minConnectionTime, minConnectionTime,
                minConnectionTimeUnit);
        }
    }

    @Override
    public Py4JPythonClient copyWith(InetAddress pythonAddress, int pythonPort) {
        return new DaemonCallbackClient(pythonPort, pythonAddress, authToken);
    }

    @Override
    public void shutdown() {
        if (cleanup != null) {
            cleanup.cancel(false);
        }
        super.shutdown();
    }
}
