package lineage.bridge;

import java.io.IOException;
import java.net.InetAddress;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkContext;
import org.apache.spark.SparkContext$;
import org.apache.spark.sql.execution.QueryExecution;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import py4j.GatewayServer;
import py4j.Py4JException;
import py4j.Py4JNetworkException;
import scala.Option;

/**
 * The JVM-wide relay between Spark's listener callbacks and the Python worker.
 *
 * <p>Listener callbacks only enqueue (bounded, never blocking). One daemon
 * thread owns everything else: it starts a py4j gateway on 127.0.0.1 with a
 * random token, launches the worker, and delivers events one by one. An event
 * is kept until the worker acknowledged it and a later {@code flush} confirmed
 * it is stored, so a worker that dies is restarted (once, by default) and the
 * unconfirmed events are replayed. Any failure disables capture with one log
 * line; the Spark job itself is never affected.
 */
final class Relay {
    private static final Logger LOG = LoggerFactory.getLogger("lineage.bridge");
    private static final String PREFIX = "lineage-listener: ";
    private static final Event CLOSE = new Event(null, null, 0L, null);
    private static final int MAX_UNCONFIRMED = 1000;
    private static final long IDLE_POLL_MS = 200L;
    /**
     * After the drain deadline the watchdog stops a worker whose call is still running (after
     * {@link Watchdog#HANG_GRACE_MS}), and the relay thread then ends by itself; waiting this much
     * longer for it is only a safety net.
     */
    private static final long RELAY_END_SLACK_MS = Watchdog.HANG_GRACE_MS + 5000L;
    private static Relay current;

    private final SparkConf sparkConf;
    private final BridgeConfig cfg;
    private final Watchdog watchdog;
    private final LinkedBlockingDeque<Event> queue = new LinkedBlockingDeque<>();
    private final List<Event> unconfirmed = new ArrayList<>();  // relay thread only
    private final Losses losses = new Losses();
    private final AtomicBoolean disabled = new AtomicBoolean();
    private final AtomicBoolean closeStarted = new AtomicBoolean();
    private final AtomicBoolean appEndRegistered = new AtomicBoolean();
    private final AtomicBoolean pythonErrorLogged = new AtomicBoolean();
    private final CountDownLatch relayDone = new CountDownLatch(1);
    private final CountDownLatch delivered = new CountDownLatch(1);  // everything queued before CLOSE is read
    private final CountDownLatch closed = new CountDownLatch(1);
    private final Object attachLock = new Object();
    private final String token = newToken();
    private final Thread hook = new Thread(this::onJvmShutdown, "lineage-bridge-shutdown");

    private volatile GatewayServer server;
    private volatile WorkerProcess process;
    private volatile long closeDeadline = Long.MAX_VALUE;
    private volatile String appId;
    private volatile SparkContext context;
    private Worker worker;  // guarded by attachLock
    private int restartsLeft;
    private int launches;              // relay thread only: the number of the latest worker
    private String lastFailure = "";  // relay thread only
    private int finishRetries;         // relay thread only

    private Relay(SparkConf conf) {
        this.sparkConf = conf;
        this.cfg = BridgeConfig.from(conf);
        this.restartsLeft = cfg.workerRestarts;
        this.watchdog = new Watchdog(cfg.stallTimeoutMs);
    }

    /** The live relay of this JVM, started on first use and after a previous one closed. */
    static synchronized Relay acquire(SparkConf conf) {
        if (current == null || current.closeStarted.get()) {
            current = new Relay(conf);
            current.start();
        }
        return current;
    }

    private void start() {
        try {
            Option<SparkContext> active = SparkContext$.MODULE$.getActive();
            if (active.isDefined()) {
                watchApplication(active.get());
            }
        } catch (RuntimeException e) {
            LOG.debug("no active SparkContext yet", e);
        }
        try {
            Runtime.getRuntime().addShutdownHook(hook);
        } catch (IllegalStateException e) {
            return;  // the JVM is already shutting down
        }
        Thread t = new Thread(this::runRelay, "lineage-bridge-relay");
        t.setDaemon(true);  // also makes the gateway's threads daemons: they never keep the JVM alive
        t.start();
    }

    // ---- called on Spark's listener bus: must return at once ----

    void submit(Event event) {
        if (!appEndRegistered.get()) {
            try {
                SparkContext sc = event.sparkContext();
                if (sc != null) {
                    watchApplication(sc);
                }
            } catch (RuntimeException e) {
                LOG.debug("cannot watch application end", e);
            }
        }
        if (disabled.get()) {
            losses.afterDisable();
            return;
        }
        if (closeStarted.get()) {
            return;
        }
        if (queue.size() >= cfg.queueCapacity) {
            if (losses.queueFull()) {
                LOG.warn(PREFIX + "lineage event queue is full (spark.lineage.queueCapacity="
                    + cfg.queueCapacity + "): dropping events until the Python worker catches up;"
                    + " the total is reported at application end");
            }
            return;
        }
        queue.offerLast(event);
    }

    private void watchApplication(SparkContext sc) {
        if (appEndRegistered.compareAndSet(false, true)) {
            context = sc;
            appId = sc.applicationId();
            sc.addSparkListener(new AppEndListener(this));
        }
    }

    // ---- called by the worker through the gateway ----

    void attach(int callbackPort, Worker w) {
        try {
            server.resetCallbackClient(InetAddress.getByName("127.0.0.1"), callbackPort);
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
        synchronized (attachLock) {
            worker = w;
            attachLock.notifyAll();
        }
    }

    /** The worker numbered {@code workerId}, Python pid {@code pid}, is alive (its heartbeat thread says so). */
    void heartbeat(String workerId, int pid) {
        WorkerProcess p = process;
        if (p != null && p.id().equals(workerId)) {
            p.pythonPidIs(pid);
            watchdog.sign();
        }
    }

    String conf(String key, String defaultValue) {
        return sparkConf == null ? defaultValue : sparkConf.get(key, defaultValue);
    }

    // ---- the relay thread ----

    private void runRelay() {
        try {
            InetAddress loopback = InetAddress.getByName("127.0.0.1");
            server = new GatewayServer.GatewayServerBuilder(new EntryPoint(this))
                .javaAddress(loopback)
                .javaPort(0)
                .authToken(token)
                .callbackClient(new DaemonCallbackClient(GatewayServer.DEFAULT_PYTHON_PORT, loopback, token))
                .build();
            server.start(true);
            watchdog.start(() -> relayDone.getCount() > 0, () -> closeDeadline);
            if (!startWorker()) {
                return;
            }
            while (true) {
                Event e = queue.pollFirst(IDLE_POLL_MS, TimeUnit.MILLISECONDS);
                if (e == null) {
                    if (!unconfirmed.isEmpty()) {
                        confirm(Math.min(10000L, cfg.drainTimeoutMs));
                    }
                } else if (e == CLOSE) {
                    delivered.countDown();  // every query is read: the application may stop its context now
                    if (finish()) {
                        return;
                    }
                } else {
                    deliver(e);
                }
                if (disabled.get()) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            disable("internal error in the bridge: " + t);
        } finally {
            delivered.countDown();
            relayDone.countDown();
        }
    }

    private void deliver(Event e) {
        for (int attempt = 0; ; attempt++) {
            try {
                Worker w = currentWorker();
                watchdog.guard(0L);
                try {
                    e.deliverTo(w);
                } finally {
                    watchdog.unguard();
                }
                unconfirmed.add(e);
                if (unconfirmed.size() >= MAX_UNCONFIRMED) {
                    confirm(Math.min(10000L, cfg.drainTimeoutMs));
                    if (unconfirmed.size() >= MAX_UNCONFIRMED) {
                        unconfirmed.remove(0);  // acknowledged, just not yet confirmed stored
                    }
                }
                return;
            } catch (Py4JException ex) {
                Failure f = classify(ex);
                if (f == Failure.UNREACHABLE && attempt == 0) {
                    pause(200L);
                    continue;  // one retry on a fresh connection before giving the worker up
                }
                if (f == Failure.PYTHON_ERROR) {
                    if (pythonErrorLogged.compareAndSet(false, true)) {
                        LOG.warn(PREFIX + "the Python worker raised an error on a lineage event (further ones"
                            + " are not logged here; see the worker's own log): " + firstLine(ex));
                    }
                    return;
                }
                queue.offerFirst(e);
                recover();
                return;
            }
        }
    }

    /** Ask the worker to flush; on success the unconfirmed events are stored and can go. */
    private void confirm(long timeoutMs) {
        try {
            if (flush(currentWorker(), timeoutMs)) {
                unconfirmed.clear();
            }
        } catch (Py4JException ex) {
            if (classify(ex) == Failure.DEAD) {
                recover();
            }  // otherwise the next delivery or idle flush finds out, with its own retry
        }
    }

    /** Handle the CLOSE marker; false when the worker died and the loop must go on (replay). */
    private boolean finish() {
        try {
            Worker w = currentWorker();
            long budget = remaining();
            long started = System.currentTimeMillis();
            if (!flush(w, budget)) {
                boolean timedOut = System.currentTimeMillis() - started >= budget - 100L;
                LOG.warn(PREFIX + (timedOut
                    ? "the store did not confirm all lineage within spark.lineage.drainTimeoutMs=" + cfg.drainTimeoutMs
                        + " ms; the worker spools what it could not write"
                    : "the worker could not write all lineage to the store now (busy or unwritable); it spooled"
                        + " it for the next write (see its log, or run lineage-listener doctor)"));
            }
            unconfirmed.clear();
            if (appId != null) {
                watchdog.guard(0L);
                try {
                    w.endRun(appId);
                } finally {
                    watchdog.unguard();
                }
                flush(w, remaining());
            }
        } catch (Py4JException ex) {
            Failure f = classify(ex);
            if (f == Failure.UNREACHABLE && finishRetries++ == 0) {
                pause(200L);
                queue.offerLast(CLOSE);
                return false;
            }
            if (f != Failure.PYTHON_ERROR) {
                queue.offerLast(CLOSE);
                recover();
                return false;
            }
            LOG.warn(PREFIX + "the Python worker failed while finishing: " + firstLine(ex));
        }
        try {
            currentWorker().shutdown();
        } catch (Py4JException ex) {
            LOG.debug("worker shutdown call failed", ex);
        }
        return true;
    }

    /** The worker is gone: restart it once and replay what it did not confirm. */
    private void recover() {
        for (int i = unconfirmed.size() - 1; i >= 0; i--) {
            queue.offerFirst(unconfirmed.get(i));
        }
        unconfirmed.clear();
        WorkerProcess dead = process;
        String why = " (" + (dead == null ? "" : dead.exitDescription() + "; ") + lastFailure + ")";
        if (dead != null) {
            dead.destroy();
        }
        if (System.currentTimeMillis() >= closeDeadline) {
            disable("the Python worker did not finish within spark.lineage.drainTimeoutMs=" + cfg.drainTimeoutMs
                + " ms after the application ended" + why + "; not restarting it");
            return;
        }
        if (restartsLeft <= 0) {
            disable("the Python worker died again" + why + "; not restarting it (spark.lineage.workerRestarts="
                + cfg.workerRestarts + ")");
            return;
        }
        restartsLeft--;
        LOG.warn(PREFIX + "the Python worker died" + why + "; restarting it and replaying "
            + countEvents() + " unconfirmed lineage events");
        startWorker();
    }

    /** A flush call, watched: the worker may take {@code timeoutMs}, and must show signs of life meanwhile. */
    private boolean flush(Worker w, long timeoutMs) {
        watchdog.guard(timeoutMs);
        try {
            return w.flush(timeoutMs);
        } finally {
            watchdog.unguard();
        }
    }

    private enum Failure { DEAD, UNREACHABLE, PYTHON_ERROR }

    /** Why a call to the worker failed: it exited, the connection broke, or Python raised. */
    private Failure classify(Py4JException ex) {
        lastFailure = firstLine(ex);
        LOG.debug("call to the Python worker failed", ex);
        WorkerProcess p = process;
        if (p == null || p.awaitExit(1000L)) {
            return Failure.DEAD;
        }
        return hasNetworkCause(ex) ? Failure.UNREACHABLE : Failure.PYTHON_ERROR;
    }

    private static void pause(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Launch the worker and wait until it attaches; disables capture and returns false if it cannot. */
    private boolean startWorker() {
        watchdog.unwatch();  // until it attaches, spark.lineage.workerStartTimeoutMs is its allowance
        synchronized (attachLock) {
            worker = null;
        }
        WorkerProcess p;
        try {
            p = WorkerProcess.launch(cfg, server.getListeningPort(), token, Integer.toString(++launches),
                Watchdog.heartbeatIntervalMs(cfg.stallTimeoutMs));
        } catch (IOException e) {
            disable("cannot run Python '" + cfg.python + "' (" + e.getMessage() + "). Fix: set"
                + " --conf spark.lineage.python=/path/to/python of an environment where lineage-listener"
                + " is installed (lineage-listener spark-conf does this)");
            return false;
        }
        process = p;
        long deadline = System.currentTimeMillis() + cfg.workerStartTimeoutMs;
        synchronized (attachLock) {
            while (worker == null) {
                long now = System.currentTimeMillis();
                if (!p.isAlive()) {
                    String last = p.lastLine();
                    disable("the Python worker '" + cfg.python + " -m " + WorkerProcess.MODULE + "' exited ("
                        + p.exitDescription() + ") before connecting" + (last.isEmpty() ? "" : ": " + last)
                        + ". Fix: pip install lineage-listener into that Python, or point"
                        + " --conf spark.lineage.python at one that has it (lineage-listener spark-conf does this)");
                    return false;
                }
                if (now >= deadline || now >= closeDeadline) {
                    p.destroy();
                    disable(now >= closeDeadline
                        ? "the application ended before the Python worker connected (spark.lineage.drainTimeoutMs="
                            + cfg.drainTimeoutMs + ")"
                        : "the Python worker did not connect within " + cfg.workerStartTimeoutMs
                            + " ms (spark.lineage.workerStartTimeoutMs)");
                    return false;
                }
                try {
                    attachLock.wait(100L);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }
        }
        p.goLive();
        watchdog.watch(p);  // from now on it beats (its heartbeat thread starts before it attaches)
        LOG.info(PREFIX + "Python worker pid " + p.pid() + " connected to the bridge on 127.0.0.1:"
            + server.getListeningPort());
        return true;
    }

    private Worker currentWorker() {
        synchronized (attachLock) {
            if (worker == null) {
                throw new Py4JNetworkException("no Python worker attached");
            }
            return worker;
        }
    }

    private long remaining() {
        return Math.max(1000L, closeDeadline - System.currentTimeMillis());
    }

    // ---- lifecycle ----

    /**
     * JVM shutdown without {@code spark.stop()}: Spark's own shutdown hook stops the context, which
     * delivers the last query events and then the application end (our {@link AppEndListener}).
     * Closing here first would race past those events, so wait for that path, bounded.
     */
    private void onJvmShutdown() {
        if (context != null && await(closed, cfg.drainTimeoutMs)) {
            return;
        }
        close("JVM shutdown");
    }

    /**
     * The application ended: returns once every queued query has been read (its {@code QueryExecution}
     * needs the live context), bounded by spark.lineage.drainTimeoutMs. Storing it, ending the run and
     * stopping the worker go on in the background while Spark and the driver shut down; the JVM's
     * shutdown hook ({@link #onJvmShutdown}) waits for them, with the same bound.
     */
    void closeAtApplicationEnd() {
        if (!startClose("application end")) {
            return;
        }
        long started = System.nanoTime();
        Thread t = new Thread(this::completeClose, "lineage-bridge-close");
        t.setDaemon(true);
        t.start();
        await(delivered, cfg.drainTimeoutMs + RELAY_END_SLACK_MS);
        LOG.info(PREFIX + "application end waited " + (System.nanoTime() - started) / 1000000L
            + " ms for the worker to read the last queries; storing them goes on while Spark stops");
    }

    /** Deliver everything queued, flush, end the run and stop; bounded by spark.lineage.drainTimeoutMs. */
    void close(String reason) {
        if (startClose(reason)) {
            completeClose();
        } else {
            await(closed, cfg.drainTimeoutMs + RELAY_END_SLACK_MS + 5000L);
        }
    }

    /** False if closing had already started. */
    private boolean startClose(String reason) {
        if (!closeStarted.compareAndSet(false, true)) {
            return false;
        }
        closeDeadline = System.currentTimeMillis() + cfg.drainTimeoutMs;
        LOG.info(PREFIX + "draining lineage events (" + reason + ")");
        if (!disabled.get()) {
            queue.offerLast(CLOSE);
        }
        return true;
    }

    private void completeClose() {
        long started = System.nanoTime();
        try {
            if (!disabled.get() && !await(relayDone, cfg.drainTimeoutMs + RELAY_END_SLACK_MS)) {
                long waiting = countEvents();
                LOG.warn(PREFIX + "gave up waiting for the Python worker after " + cfg.drainTimeoutMs
                    + " ms (spark.lineage.drainTimeoutMs)"
                    + (waiting > 0 ? "; " + waiting + " lineage events were not captured" : ""));
            }
            losses.report(cfg.queueCapacity);
            stopProcessAndGateway();
            LOG.info(PREFIX + "drained in " + (System.nanoTime() - started) / 1000000L
                + " ms; the worker has stopped");
        } finally {
            closed.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException | SecurityException ignored) {
                // already shutting down
            }
        }
    }

    private void stopProcessAndGateway() {
        WorkerProcess p = process;
        if (p != null && !p.awaitExit(5000L)) {
            p.destroy();
        }
        GatewayServer s = server;
        if (s != null) {
            s.shutdown();
        }
    }

    private void disable(String reason) {
        if (!disabled.compareAndSet(false, true)) {
            return;
        }
        long unconf = unconfirmed.size();
        long lost = countEvents() - unconf;
        losses.disabled(lost, unconf);
        queue.clear();
        unconfirmed.clear();
        LOG.warn(PREFIX + "lineage capture is OFF for this run, the job itself continues: " + reason
            + (lost > 0 ? " [" + lost + " lineage events not captured]" : "")
            + (unconf > 0 ? " [" + unconf + " delivered but not confirmed stored]" : ""));
        WorkerProcess p = process;
        if (p != null) {
            p.destroy();
        }
    }

    private long countEvents() {
        long n = unconfirmed.size();
        for (Event e : queue) {
            if (e != CLOSE) {
                n++;
            }
        }
        return n;
    }

    private static boolean await(CountDownLatch latch, long ms) {
        try {
            return latch.await(ms, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static boolean hasNetworkCause(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof Py4JNetworkException || c instanceof IOException) {
                return true;
            }
        }
        return false;
    }

    private static String firstLine(Throwable t) {
        String s = String.valueOf(t.getMessage());
        int nl = s.indexOf('\n');
        return nl < 0 ? s : s.substring(0, nl);
    }

    private static String newToken() {
        byte[] bytes = new byte[32];
        new SecureRandom().nextBytes(bytes);
        StringBuilder sb = new StringBuilder();
        for (byte b : bytes) {
            sb.append(String.format("%02x", b));
        }
        return sb.toString();
    }
}
