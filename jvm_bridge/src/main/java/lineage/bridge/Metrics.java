package lineage.bridge;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What Spark measured while it ran a query, read from its executed physical plan once the action
 * has run: the write's rows, bytes and files (a write command's {@code numOutputRows},
 * {@code numOutputBytes}, {@code numFiles}), and each source scan's rows (and, for files, bytes and
 * files), keyed as {@link PlanReader} keys the source leaves (the first output id of the analyzed
 * leaf the scan reads). The rules of {@code capture/statistics.py}, which reads the write's counts
 * by py4j calls when the plan reader is not there.
 *
 * <pre>{"write": {"rows": 100, "bytes": 2024, "files": 2}, "reads": [[leaf id, rows, bytes, files]...]}</pre>
 *
 * Reflection only; any failure gives no statistics, never an error of the plan read.
 */
final class Metrics {
    /** Physical nodes that write a query's result: their metrics are the write's. */
    private static final Set<String> WRITES = new java.util.HashSet<>(java.util.Arrays.asList(
            "DataWritingCommandExec", "AppendDataExec", "AppendDataExecV1", "OverwriteByExpressionExec",
            "OverwriteByExpressionExecV1", "OverwritePartitionsDynamicExec", "ReplaceDataExec", "WriteDeltaExec",
            "CreateTableAsSelectExec", "AtomicCreateTableAsSelectExec", "ReplaceTableAsSelectExec",
            "AtomicReplaceTableAsSelectExec"));
    /** Physical nodes that scan a source: the field holding what the analyzed leaf holds too. */
    private static final Map<String, String> SCANS = new java.util.HashMap<>();

    static {
        SCANS.put("FileSourceScanExec", "relation");
        SCANS.put("RowDataSourceScanExec", "relation");
        SCANS.put("BatchScanExec", "table");
        SCANS.put("HiveTableScanExec", "relation");
    }
    /** At most this many physical nodes are looked at (a runaway plan costs nothing more). */
    private static final int MAX_NODES = 10_000;

    private Metrics() {
    }

    /**
     * The statistics of {@code qe}, or null when it has none. {@code relations}: what each analyzed
     * source leaf reads (its relation, table or the leaf itself), {@code leaves}: each such leaf, both
     * mapped to the leaf's key.
     */
    static Map<String, Object> of(Object qe, Map<Object, Long> relations, Map<Object, Long> leaves) {
        try {
            Map<Long, Long> ids = new java.util.HashMap<>();  // output id -> leaf key, made when first needed
            Object executed = Facts.call(qe, "executedPlan");
            Map<String, Object> out = new LinkedHashMap<>();
            Map<Long, long[]> reads = new LinkedHashMap<>();
            ArrayDeque<Object> todo = new ArrayDeque<>();
            todo.add(executed);
            boolean root = true;
            for (int seen = 0; !todo.isEmpty() && seen < MAX_NODES; seen++) {
                Object node = todo.poll();
                String name = node.getClass().getSimpleName();
                if (name.equals("AdaptiveSparkPlanExec")) {
                    todo.add(Facts.call(node, "executedPlan"));
                    continue;
                }
                if (name.endsWith("QueryStageExec")) {
                    todo.add(Facts.call(node, "plan"));
                    continue;
                }
                if (name.startsWith("Reused")) {  // counted where it first ran
                    continue;
                }
                if (root && WRITES.contains(name)) {
                    Map<String, Long> m = metrics(node);
                    if (m.containsKey("numOutputRows")) {
                        Map<String, Object> write = new LinkedHashMap<>();
                        write.put("rows", m.get("numOutputRows"));
                        write.put("bytes", m.get("numOutputBytes"));
                        write.put("files", m.get("numFiles"));
                        out.put("write", write);
                    }
                }
                root = false;
                String field = SCANS.get(name);
                if (field != null) {
                    Long leaf = leafOf(node, field, relations, leaves, ids);
                    Map<String, Long> m = metrics(node);
                    if (leaf != null && m.containsKey("numOutputRows")) {
                        long[] sum = reads.computeIfAbsent(leaf, k -> new long[] {0, 0, 0, 0});
                        sum[0] += m.get("numOutputRows");
                        sum[1] += m.getOrDefault("filesSize", 0L);
                        sum[2] += m.getOrDefault("numFiles", 0L);
                        sum[3] |= m.containsKey("filesSize") ? 1 : 0;
                    }
                    continue;
                }
                todo.addAll(Facts.seq(Facts.call(node, "children")));
            }
            if (!reads.isEmpty()) {
                List<Object> rows = new ArrayList<>();
                for (Map.Entry<Long, long[]> e : reads.entrySet()) {
                    long[] s = e.getValue();
                    rows.add(java.util.Arrays.asList(e.getKey(), s[0], s[3] == 1 ? s[1] : null,
                            s[3] == 1 ? s[2] : null));
                }
                out.put("reads", rows);
            }
            return out.isEmpty() ? null : out;
        } catch (Exception | LinkageError e) {
            return null;
        }
    }

    /** The analyzed leaf a scan reads: by the object both hold, else by an output id they share. */
    private static Long leafOf(Object scan, String field, Map<Object, Long> relations, Map<Object, Long> leaves,
                               Map<Long, Long> ids) {
        try {
            Long found = relations.get(Facts.call(scan, field));
            if (found != null) {
                return found;
            }
            if (ids.isEmpty()) {  // a pruned copy of the relation: match by the columns it outputs
                for (Map.Entry<Object, Long> leaf : leaves.entrySet()) {
                    for (Object attr : Facts.seq(Facts.call(leaf.getKey(), "output"))) {
                        ids.put(((Number) Facts.call(Facts.call(attr, "exprId"), "id")).longValue(), leaf.getValue());
                    }
                }
            }
            for (Object attr : Facts.seq(Facts.call(scan, "output"))) {
                found = ids.get(((Number) Facts.call(Facts.call(attr, "exprId"), "id")).longValue());
                if (found != null) {
                    return found;
                }
            }
        } catch (Exception e) {
            // not this Spark's field: the scan stays unmatched
        }
        return null;
    }

    /** What an analyzed source leaf reads, as the scans of it hold it (null: none known). */
    static Object relationOf(Object leaf, String name) {
        try {
            switch (name) {
                case "LogicalRelation":
                    return Facts.call(leaf, "relation");
                case "DataSourceV2Relation":
                    return Facts.call(leaf, "table");
                case "DataSourceV2ScanRelation":
                    return Facts.call(Facts.call(leaf, "relation"), "table");
                case "HiveTableRelation":
                    return leaf;
                default:
                    return null;
            }
        } catch (Exception e) {
            return null;
        }
    }

    /** A physical node's metrics: name -> value. */
    private static Map<String, Long> metrics(Object node) throws Exception {
        Map<String, Long> out = new LinkedHashMap<>();
        Object m = Facts.call(node, "metrics");
        scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) m).iterator();
        while (it.hasNext()) {
            scala.Product2<?, ?> pair = (scala.Product2<?, ?>) it.next();
            Object value = Facts.call(pair._2(), "value");
            if (value instanceof Number) {
                out.put(String.valueOf(pair._1()), ((Number) value).longValue());
            }
        }
        return out;
    }

    /** A map by identity: two relations (or leaves) may be equal without being the same object. */
    static Map<Object, Long> byIdentity() {
        return new IdentityHashMap<>();
    }
}
