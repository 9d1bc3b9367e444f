package lineage.bridge;

import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Worker supervision by silence: a worker that stops answering (frozen, SIGSTOP) would hold the
 * relay until the application ends. Each call to the worker is guarded with the time it may take;
 * once a call overruns that by {@code spark.lineage.stallTimeoutMs}, the worker process is stopped,
 * so the blocked call fails like a dead worker's and the relay restarts it and replays.
 */
final class Watchdog {
    private static final Logger LOG = LoggerFactory.getLogger("lineage.bridge");

    private final long stallTimeoutMs;
    private volatile long callDeadline = Long.MAX_VALUE;  // a call to the worker must have returned by then

    Watchdog(long stallTimeoutMs) {
        this.stallTimeoutMs = stallTimeoutMs;
    }

    /** A call that may legitimately take {@code expectedMs} starts now. */
    void guard(long expectedMs) {
        callDeadline = System.currentTimeMillis() + expectedMs + stallTimeoutMs;
    }

    void unguard() {
        callDeadline = Long.MAX_VALUE;
    }

    /** Watch {@code process()} on a daemon thread while {@code running} holds. */
    void start(java.util.function.Supplier<WorkerProcess> process, BooleanSupplier running) {
        Thread t = new Thread(() -> {
            while (running.getAsBoolean()) {
                try {
                    Thread.sleep(Math.min(1000L, Math.max(50L, stallTimeoutMs / 4)));
                } catch (InterruptedException e) {
                    return;
                }
                WorkerProcess p = process.get();
                if (p != null && System.currentTimeMillis() > callDeadline) {
                    callDeadline = Long.MAX_VALUE;
                    LOG.warn("lineage-listener: the Python worker (pid " + p.pid() + ") did not answer for "
                        + stallTimeoutMs + " ms (spark.lineage.stallTimeoutMs); stopping it");
                    p.destroy();
                }
            }
        }, "lineage-bridge-watchdog");
        t.setDaemon(true);
        t.start();
    }
}
