package lineage.bridge;

import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Worker supervision by signs of life. A worker that is working, however slowly, keeps giving them:
 * its heartbeat (a call from its own thread on its own connection, so it never waits for the event
 * in progress), its CPU time advancing (while a C call holds Python's GIL and no heartbeat can run),
 * and its answers. A frozen worker ({@code SIGSTOP}, a process that gets no CPU at all) gives none.
 *
 * <p>A call to the worker that has not returned while the worker gave no sign of life for
 * {@code spark.lineage.stallTimeoutMs} is abandoned: the process is stopped, so the blocked call fails
 * like a dead worker's and the relay restarts it and replays. A slow worker is never stopped for being
 * slow while the job runs. Once the application has ended, a call still running past both the drain
 * deadline ({@code spark.lineage.drainTimeoutMs}) and its own timeout is abandoned as well, alive or
 * not (a worker deadlocked in Python keeps beating): the driver is never held past the drain.
 */
final class Watchdog {
    private static final Logger LOG = LoggerFactory.getLogger("lineage.bridge");
    /** How long past the drain deadline a call may take to come back (its answer is on the way). */
    static final long HANG_GRACE_MS = 1000L;
    private static final long IDLE = Long.MIN_VALUE;  // callDeadline when no call is outstanding

    private final long stallTimeoutMs;
    private final long tickMs;
    private final AtomicLong signs = new AtomicLong();
    private final AtomicReference<WorkerProcess> watched = new AtomicReference<>();
    private volatile long callDeadline = IDLE;

    Watchdog(long stallTimeoutMs) {
        this.stallTimeoutMs = stallTimeoutMs;
        this.tickMs = clamp(stallTimeoutMs / 10, 20L, 250L);
    }

    /**
     * How often a worker beats: five beats per stall timeout, so a few late ones are not a stall.
     * For example 2000 ms for the default {@code stallTimeoutMs} of 10000.
     */
    static long heartbeatIntervalMs(long stallTimeoutMs) {
        return clamp(stallTimeoutMs / 5, 20L, 2000L);
    }

    /** Watch {@code p} from now on: it has attached, which is a sign of life. */
    void watch(WorkerProcess p) {
        watched.set(p);
        signs.incrementAndGet();
    }

    void unwatch() {
        watched.set(null);
    }

    /** The watched worker is alive: a heartbeat arrived. */
    void sign() {
        signs.incrementAndGet();
    }

    /** A call that may legitimately take {@code expectedMs} starts now; silence is counted from here. */
    void guard(long expectedMs) {
        signs.incrementAndGet();
        callDeadline = System.currentTimeMillis() + expectedMs;
    }

    /** The call returned: an answer, so a sign of life too. */
    void unguard() {
        callDeadline = IDLE;
        signs.incrementAndGet();
    }

    /** Watch on a daemon thread while {@code running} holds; {@code closeDeadline} is the drain deadline. */
    void start(BooleanSupplier running, LongSupplier closeDeadline) {
        Thread t = new Thread(() -> watchLoop(running, closeDeadline), "lineage-bridge-watchdog");
        t.setDaemon(true);
        t.start();
    }

    private void watchLoop(BooleanSupplier running, LongSupplier closeDeadline) {
        WorkerProcess seen = null;
        long seenSigns = -1L;
        long seenCpu = -1L;
        long silentMs = 0L;
        long last = System.nanoTime();
        while (running.getAsBoolean()) {
            try {
                Thread.sleep(tickMs);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            // A tick that came late means this JVM itself did not run (GC pause, starved, stopped):
            // count only what was observed, so a late tick never turns into a stall.
            long elapsedMs = Math.min((now - last) / 1_000_000L, 2 * tickMs);
            last = now;
            WorkerProcess p = watched.get();
            if (p == null) {
                continue;
            }
            long s = signs.get();
            long cpu = ProcessCpu.ticks(p.cpuPid());
            long deadline = callDeadline;
            if (p != seen || s != seenSigns || cpu != seenCpu) {
                seen = p;
                seenSigns = s;
                seenCpu = cpu;
                silentMs = 0L;
            } else if (deadline != IDLE) {
                silentMs += elapsedMs;
            }
            if (deadline == IDLE) {
                continue;
            }
            if (silentMs >= stallTimeoutMs) {
                stop(p, "did not answer for " + stallTimeoutMs + " ms (spark.lineage.stallTimeoutMs) and gave no"
                    + " sign of life (no heartbeat, no CPU time)");
            } else if (System.currentTimeMillis() - HANG_GRACE_MS > Math.max(closeDeadline.getAsLong(), deadline)) {
                stop(p, "is alive but did not finish its work by the end of the drain"
                    + " (spark.lineage.drainTimeoutMs)");
            }
        }
    }

    private void stop(WorkerProcess p, String why) {
        if (watched.compareAndSet(p, null)) {
            LOG.warn("lineage-listener: the Python worker (pid " + p.pid() + ") " + why + "; stopping it");
            p.destroy();
        }
    }

    private static long clamp(long value, long min, long max) {
        return Math.max(min, Math.min(max, value));
    }
}
