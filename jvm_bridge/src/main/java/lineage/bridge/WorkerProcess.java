package lineage.bridge;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Deque;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The Python worker process: {@code <python> -m lineage_listener.bridge.worker}.
 * Port and token travel in environment variables, never in argv. Its output is
 * held back until it has connected (so a failed start becomes one summary
 * line), then forwarded to the driver's stderr. Its stdin stays open: when
 * the JVM dies the worker sees end-of-file and exits.
 */
final class WorkerProcess {
    static final String MODULE = "lineage_listener.bridge.worker";
    private static final int KEEP_LINES = 40;

    private final Process process;
    private final String id;
    private final long pid;
    private final Deque<String> early = new ArrayDeque<>();
    private boolean live;  // guarded by early
    private volatile long pythonPid;  // the Python process, as its heartbeat says (a wrapper may not exec)

    private WorkerProcess(Process process, String id) {
        this.process = process;
        this.id = id;
        this.pid = pidOf(process);
        this.pythonPid = pid;
        Thread pump = new Thread(this::pump, "lineage-bridge-worker-output");
        pump.setDaemon(true);
        pump.start();
    }

    /**
     * Start worker number {@code id} of this relay; it beats every {@code heartbeatMs} with that id
     * (so a beat from an earlier worker is never taken for this one's).
     */
    static WorkerProcess launch(BridgeConfig cfg, int port, String token, String id, long heartbeatMs)
            throws IOException {
        ProcessBuilder pb = new ProcessBuilder(Arrays.asList(cfg.python, "-m", MODULE));
        pb.redirectErrorStream(true);  // the worker's stdout must never mix into the job's stdout
        Map<String, String> env = pb.environment();
        env.remove("PYSPARK_GATEWAY_PORT");
        env.remove("PYSPARK_GATEWAY_SECRET");
        env.put("LINEAGE_BRIDGE_PORT", Integer.toString(port));
        env.put("LINEAGE_BRIDGE_TOKEN", token);
        env.put("LINEAGE_BRIDGE_WORKER_ID", id);
        env.put("LINEAGE_BRIDGE_HEARTBEAT_MS", Long.toString(heartbeatMs));
        if (!cfg.store.isEmpty()) {
            env.put("LINEAGE_STORE", cfg.store);
        }
        if (!cfg.logLevel.isEmpty()) {
            env.put("LINEAGE_LOG_LEVEL", cfg.logLevel);
        }
        if (!cfg.serverUrl.isEmpty()) {
            env.put("LINEAGE_URL", cfg.serverUrl);
        }
        if (!cfg.serverToken.isEmpty()) {
            env.put("LINEAGE_TOKEN", cfg.serverToken);
        }
        if (!cfg.sqlText.isEmpty()) {  // what the worker keeps of SQL text (lineage_listener/capture/textmode.py)
            env.put("LINEAGE_SQL_TEXT", cfg.sqlText);
        }
        if (!cfg.tlsCa.isEmpty()) {
            env.put("LINEAGE_TLS_CA", cfg.tlsCa);
        }
        if (!cfg.openlineageUrl.isEmpty()) {
            env.put("LINEAGE_OPENLINEAGE_URL", cfg.openlineageUrl);
        }
        if (!cfg.kafka.isEmpty()) {  // the worker publishes to Kafka (lineage_listener/kafka/settings.py)
            StringBuilder json = new StringBuilder();
            Json.value(json, cfg.kafka);
            env.put("LINEAGE_KAFKA", json.toString());
        }
        if (!cfg.pythonPath.isEmpty()) {
            String old = env.getOrDefault("PYTHONPATH", "");
            env.put("PYTHONPATH", old.isEmpty() ? cfg.pythonPath : cfg.pythonPath + File.pathSeparator + old);
        }
        return new WorkerProcess(pb.start(), id);
    }

    String id() {
        return id;
    }

    /** The pid of the process launched (the Python, or a wrapper that runs it); -1 if unknown. */
    long pid() {
        return pid;
    }

    /** The pid whose CPU time shows the worker at work: the Python process itself once it has said so. */
    long cpuPid() {
        return pythonPid;
    }

    void pythonPidIs(long reported) {
        pythonPid = reported;
    }

    /** {@code Process.pid()} on Java 9+, the private field on Java 8; -1 if unknown. */
    private static long pidOf(Process process) {
        try {
            return (Long) Process.class.getMethod("pid").invoke(process);
        } catch (ReflectiveOperationException | RuntimeException java8) {
            try {
                java.lang.reflect.Field f = process.getClass().getDeclaredField("pid");
                f.setAccessible(true);
                return f.getLong(process);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return -1L;
            }
        }
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** Wait up to {@code ms} for the process to exit; true if it has. */
    boolean awaitExit(long ms) {
        try {
            return process.waitFor(Math.max(0L, ms), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !process.isAlive();
        }
    }

    String exitDescription() {
        return process.isAlive() ? "still running" : "exit code " + process.exitValue();
    }

    void destroy() {
        process.destroyForcibly();
    }

    /** From now on forward the worker's output straight to stderr. */
    void goLive() {
        synchronized (early) {
            for (String line : early) {
                System.err.println(line);
            }
            early.clear();
            live = true;
        }
    }

    /** The last non-blank line the worker wrote before connecting, or "". */
    String lastLine() {
        awaitPumpQuiet();
        synchronized (early) {
            String last = "";
            for (String line : early) {
                if (!line.trim().isEmpty()) {
                    last = line.trim();
                }
            }
            return last;
        }
    }

    private void awaitPumpQuiet() {
        // The pump may still be reading the final lines of a process that just exited.
        try {
            Thread.sleep(100);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void pump() {
        try (BufferedReader in = new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                synchronized (early) {
                    if (live) {
                        System.err.println(line);
                    } else {
                        early.addLast(line);
                        if (early.size() > KEEP_LINES) {
                            early.removeFirst();
                        }
                    }
                }
            }
        } catch (IOException ignored) {
            // the process is gone; nothing more to forward
        }
    }
}
