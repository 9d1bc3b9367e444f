package lineage.bridge;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.WeakHashMap;

import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerEvent;

/**
 * Tells the steps of a recursive CTE from statements: Spark (4.1+) runs a {@code WITH RECURSIVE}
 * anchor and rounds as queries of their own inside the statement's execution, and the listener is
 * told of each ({@code capture/reading/skips.py}, filter {@code recursion_step}).
 *
 * <p>A step is a query whose SQL execution is nested (its {@code rootExecutionId} is another
 * execution's) under a root whose executions run a {@code UnionLoop}. This listener reads that from
 * each {@code SparkListenerSQLExecutionStart}, keyed by the {@code QueryExecution}'s {@code queryId};
 * it sits on the shared listener queue with Spark's {@code ExecutionListenerBus}, so a query's start
 * is read before the listeners are told of its end. Reflection only: Spark 3.5 has no
 * {@code queryId} and no recursive CTE, and nothing is a step there.
 */
final class RecursionSteps extends SparkListener {
    private static final Set<Object> WATCHED = Collections.synchronizedSet(
            Collections.newSetFromMap(new WeakHashMap<>()));
    private static final RecursionSteps INSTANCE = new RecursionSteps();
    private static final int KEPT = 10_000;

    /** queryId -> root execution id, for the nested executions seen lately. */
    private final Map<Object, Long> nested = bounded();
    /** Root execution ids whose executions run a recursion. */
    private final Map<Long, Boolean> recursive = bounded();

    private RecursionSteps() {
    }

    private static <K, V> Map<K, V> bounded() {
        return Collections.synchronizedMap(new LinkedHashMap<K, V>(256, 0.75f, false) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<K, V> eldest) {
                return size() > KEPT;
            }
        });
    }

    /** Watch the SQL executions of {@code sparkContext} (once per context). */
    static void watch(Object sparkContext) {
        if (sparkContext == null || !WATCHED.add(sparkContext)) {
            return;
        }
        try {
            sparkContext.getClass().getMethod("addSparkListener",
                    Class.forName("org.apache.spark.scheduler.SparkListenerInterface", false,
                                  sparkContext.getClass().getClassLoader()))
                    .invoke(sparkContext, INSTANCE);
        } catch (Exception e) {
            WATCHED.remove(sparkContext);  // not watched: steps are captured as queries
        }
    }

    /** Watch the active SparkContext, if there is one. */
    static void watchActive() {
        try {
            Class<?> cls = Class.forName("org.apache.spark.SparkContext");
            watch(Facts.opt(cls.getMethod("getActive").invoke(null)));
        } catch (Exception e) {
            // no active context yet: the first query's head watches its own
        }
    }

    /** True when {@code qe} runs a step of a recursive CTE inside another statement's execution. */
    static boolean isStep(Object qe) {
        try {
            Long root = INSTANCE.nested.get(Facts.call(qe, "queryId"));
            return root != null && INSTANCE.recursive.containsKey(root);
        } catch (Exception e) {
            return false;  // no queryId on this Spark
        }
    }

    @Override
    public void onOtherEvent(SparkListenerEvent event) {
        if (!event.getClass().getSimpleName().equals("SparkListenerSQLExecutionStart")) {
            return;
        }
        try {
            long id = (Long) Facts.call(event, "executionId");
            Object root = Facts.opt(Facts.call(event, "rootExecutionId"));
            long rootId = root == null ? id : ((Number) root).longValue();
            if (String.valueOf(Facts.call(event, "physicalPlanDescription")).contains("UnionLoop")) {
                recursive.put(rootId, Boolean.TRUE);
            }
            Object queryId = Facts.opt(Facts.call(event, "queryId"));
            if (rootId != id && queryId != null) {
                nested.put(queryId, rootId);
            }
        } catch (Exception e) {
            // an event of another shape (Spark 3.5: no queryId): nothing is a step
        }
    }
}
