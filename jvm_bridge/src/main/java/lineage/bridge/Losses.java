package lineage.bridge;

import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Exact counts of lineage events that were not captured, and the one true line about them. */
final class Losses {
    private static final Logger LOG = LoggerFactory.getLogger("lineage.bridge");

    private final AtomicLong queueFull = new AtomicLong();      // dropped: the queue was at capacity
    private final AtomicLong atDisable = new AtomicLong();      // waiting (never delivered) when capture went off
    private final AtomicLong unconfirmed = new AtomicLong();    // delivered, not confirmed stored, at that moment
    private final AtomicLong afterDisable = new AtomicLong();   // arrived after capture went off

    /** True for the first drop, so the caller logs the full-queue line once. */
    boolean queueFull() {
        return queueFull.getAndIncrement() == 0;
    }

    void afterDisable() {
        afterDisable.incrementAndGet();
    }

    void disabled(long waiting, long delivered) {
        atDisable.set(waiting);
        unconfirmed.set(delivered);
    }

    /** The application-end lines: only when something was really not captured. */
    void report(int queueCapacity) {
        long off = atDisable.get() + afterDisable.get();
        if (off > 0 || unconfirmed.get() > 0) {
            LOG.warn("lineage-listener: " + off + " lineage events of this run were not captured (" + atDisable.get()
                + " waiting when capture went off, " + afterDisable.get() + " after)"
                + (unconfirmed.get() > 0 ? "; " + unconfirmed.get()
                    + " more were delivered but not confirmed stored (some may be in the store)" : ""));
        }
        long full = queueFull.get();
        if (full > 0) {
            LOG.warn("lineage-listener: " + full + " lineage events were dropped because the queue was full"
                + " (raise spark.lineage.queueCapacity=" + queueCapacity + ")");
        }
    }
}
