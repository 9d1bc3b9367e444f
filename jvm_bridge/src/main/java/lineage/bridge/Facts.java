package lineage.bridge;

import java.lang.reflect.Method;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Facts the plan JSON leaves out, read on the JVM in the plan reader's call: what the fact readers
 * of {@code lineage_listener/capture/reading/readers/} read with a few py4j calls each, for the common
 * leaves and write targets (catalog tables, files read or written by path).
 *
 * <p>The rules are those of the Python readers, which stay the reference ({@code catalog.py},
 * {@code v1.py}, {@code files.py}): a leaf or target this class does not know (JDBC, Kafka, Delta,
 * DataSource V2...) is left out, and the Python side reads it from the JVM objects. Every fact is a plain map of strings, booleans, lists and maps.
 * Reflection only, so one class file serves Spark 3.5 and 4.x.
 */
final class Facts {
    private static final Map<String, Method> METHODS = new ConcurrentHashMap<>();

    private Facts() {
    }

    // -- a query's head: what decides whether its plan is read at all -----------------------
    /**
     * The application id, QueryExecution id, root node name and SQL text of {@code qe}; {@code step}
     * when it runs a step of a recursive CTE ({@link RecursionSteps}).
     */
    static Map<String, Object> head(Object qe) throws Exception {
        Map<String, Object> head = new LinkedHashMap<>();
        Object sparkContext = call(call(qe, "sparkSession"), "sparkContext");
        head.put("app", String.valueOf(call(sparkContext, "applicationId")));
        head.put("qe", call(qe, "id"));
        RecursionSteps.watch(sparkContext);
        if (RecursionSteps.isStep(qe)) {  // a recursive CTE's step, not a statement
            head.put("step", Boolean.TRUE);
        }
        Object sql = null;
        try {
            sql = statementText(call(qe, "logical"));
        } catch (Exception e) {
            // no origin on this Spark: the SQL text stays unknown
        }
        head.put("sql", sql == null ? null : String.valueOf(sql));
        Object analyzed;
        try {
            analyzed = call(qe, "analyzed");
            head.put("root", String.valueOf(call(analyzed, "nodeName")));
        } catch (Exception e) {  // analysis failed: the Python side reads the error itself
            head.put("error", String.valueOf(e.getCause() != null ? e.getCause() : e));
            return head;
        }
        if (readsCommandResult(qe, analyzed)) {
            head.put("result", Boolean.TRUE);
        }
        return head;
    }

    /**
     * The text of the {@code spark.sql} statement {@code plan} came from, or null: the root's origin,
     * else the first node below it with a text that does not start there (analysis replaced the root,
     * as for a CTAS); nodes parsed from a view are skipped. The rules of {@code capture/reading/statement.py}.
     */
    static Object statementText(Object plan) throws Exception {
        ArrayDeque<Object> todo = new ArrayDeque<>();
        todo.add(plan);
        for (int seen = 0; !todo.isEmpty() && seen <= STATEMENT_NODES; seen++) {
            Object node = todo.poll();
            Object origin = call(node, "origin");
            if (opt(call(origin, "objectType")) != null) {
                continue;
            }
            Object text = opt(call(origin, "sqlText"));
            if (text != null) {
                Object start = opt(call(origin, "startIndex"));
                String sql = String.valueOf(text);
                boolean inside = start instanceof Integer && (Integer) start <= sql.length()
                        && !sql.substring(0, (Integer) start).trim().isEmpty();
                return node == plan || inside ? sql : null;
            }
            todo.addAll(seq(call(node, "innerChildren")));
            todo.addAll(seq(call(node, "children")));
        }
        return null;
    }

    /** Plan nodes {@link #statementText} looks at below the root. */
    private static final int STATEMENT_NODES = 8;

    /**
     * True when {@code qe} ran its command already and holds its result rows: an action on the
     * DataFrame {@code spark.sql(command)} returned (rules: {@code capture/reading/command_result.py}).
     */
    private static boolean readsCommandResult(Object qe, Object analyzed) {
        try {
            Class<?> command = Class.forName("org.apache.spark.sql.catalyst.plans.logical.Command", false,
                                             analyzed.getClass().getClassLoader());
            return commands(command, analyzed) && results(call(qe, "commandExecuted"));
        } catch (Exception e) {
            return false;  // no such plan on this Spark: the action is read as before
        }
    }

    /** Result rows of a command, or of each command of a multi-insert (Spark 3.5's). */
    private static boolean results(Object executed) throws Exception {
        if ("CommandResult".equals(String.valueOf(call(executed, "nodeName")))) {
            return true;
        }
        if (!"Union".equals(String.valueOf(call(executed, "nodeName")))) {
            return false;
        }
        for (Object child : seq(call(executed, "children"))) {
            if (!"CommandResult".equals(String.valueOf(call(child, "nodeName")))) {
                return false;
            }
        }
        return true;
    }

    /** A command, or a multi-insert: a {@code Union} of commands ({@code capture/multiwrite.py}). */
    private static boolean commands(Class<?> command, Object plan) throws Exception {
        if (command.isInstance(plan)) {
            return true;
        }
        if (!"Union".equals(String.valueOf(call(plan, "nodeName")))) {
            return false;
        }
        for (Object child : seq(call(plan, "children"))) {
            if (!command.isInstance(child)) {
                return false;
            }
        }
        return true;
    }

    // -- leaves -------------------------------------------------------------------------------
    /** Facts of a source leaf named {@code name}, or null when the Python side must read them. */
    static Map<String, Object> leaf(Object leaf, String name) {
        try {
            if (name.equals("LogicalRelation")) {
                return logicalRelation(leaf);
            }
            if (name.equals("HiveTableRelation")) {
                Map<String, Object> fact = catalogTable(call(leaf, "tableMeta"));
                if (fact != null) {
                    fact.put("format", "hive");
                }
                return fact;
            }
        } catch (Exception e) {
            return null;
        }
        return null;
    }

    private static Map<String, Object> logicalRelation(Object leaf) throws Exception {
        Map<String, Object> fact = new LinkedHashMap<>();
        Object table = opt(call(leaf, "catalogTable"));
        if (table != null) {
            Map<String, Object> known = catalogTable(table);
            if (known == null) {
                return null;
            }
            fact.putAll(known);
        }
        Object rel = call(leaf, "relation");
        String kind = rel.getClass().getSimpleName();
        if (kind.isEmpty()) {
            kind = rel.getClass().getSuperclass().getSimpleName();
        }
        if (kind.equals("HadoopFsRelation")) {
            Object index = call(rel, "location");
            String indexKind = index.getClass().getSimpleName();
            if (indexKind.startsWith("Tahoe") || indexKind.startsWith("PreparedDelta") || indexKind.startsWith("Delta")) {
                return null;  // a Delta read: its version is read by the Python side
            }
            List<String> paths = new ArrayList<>();
            for (Object p : seq(call(index, "rootPaths"))) {
                paths.add(qualify(String.valueOf(p)));
            }
            fact.put("paths", paths);
            if (fact.get("format") == null) {
                fact.put("format", shortName(call(rel, "fileFormat")));
            }
            fact.put("options", map(call(rel, "options")));
            return fact;
        }
        if (kind.equals("KafkaRelation") || kind.equals("JDBCRelation")) {
            return null;
        }
        if (fact.get("format") == null) {
            fact.put("format", kind);
        }
        return fact;
    }

    /** {@code facts.catalog_table}: identity, location, provider, view; null if not qualified. */
    static Map<String, Object> catalogTable(Object table) throws Exception {
        Map<String, Object> ident = identifier(call(table, "identifier"));
        if (ident == null) {
            return null;
        }
        Map<String, Object> fact = new LinkedHashMap<>();
        fact.put("table", ident);
        try {
            Object loc = opt(call(call(table, "storage"), "locationUri"));
            fact.put("location", loc == null ? null : String.valueOf(loc));
        } catch (Exception e) {
            // no storage: location unknown
        }
        Object provider = opt(call(table, "provider"));
        fact.put("format", provider == null ? null : String.valueOf(provider));
        try {
            fact.put("view", "VIEW".equals(String.valueOf(call(call(table, "tableType"), "name"))));
        } catch (Exception e) {
            // no table type
        }
        Map<String, String> labelled = new LinkedHashMap<>();
        try {  // labels the table keeps: facts.classified, capture/recording/spark_labels.py
            for (Map.Entry<String, String> p : map(call(table, "properties")).entrySet()) {
                if (p.getKey().startsWith("lineage.classification.")) {
                    labelled.put(p.getKey(), p.getValue());
                }
            }
        } catch (Exception e) {
            // no properties
        }
        if (!labelled.isEmpty()) {
            fact.put("classification", labelled);
        }
        try {
            String schema = String.valueOf(call(call(table, "schema"), "json"));
            if (schema.contains("classification")) {
                fact.put("classified_schema", schema);
            }
        } catch (Exception e) {
            // no schema
        }
        return fact;
    }

    /** A {@code TableIdentifier} with its database, or null (the session's current one is needed). */
    private static Map<String, Object> identifier(Object ident) throws Exception {
        Object database = opt(call(ident, "database"));
        if (database == null) {
            return null;
        }
        Object catalog = null;
        try {
            catalog = opt(call(ident, "catalog"));
        } catch (NoSuchMethodException e) {
            // Spark before 3.4: no catalog in table identifiers
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("catalog", catalog == null ? null : String.valueOf(catalog));
        out.put("database", String.valueOf(database));
        out.put("table", String.valueOf(call(ident, "table")));
        return out;
    }

    // -- write targets ----------------------------------------------------------------------
    /**
     * Facts of write command {@code name}'s target with its schema, or null (read by the Python side);
     * of a multi-insert (a {@code Union} of writes), {@code {"writes": [...]}}, each write's target in
     * plan order, or null unless every write's target is known here ({@code capture/multiwrite.py}).
     */
    static Map<String, Object> target(Object cmd, String name) {
        if (name.equals("Union")) {
            return writes(cmd);
        }
        try {
            Map<String, Object> fact = knownTarget(cmd, name);
            if (fact == null) {
                return null;
            }
            for (String getter : new String[] {"query", "plan", "child", "target"}) {
                try {
                    fact.put("schema", String.valueOf(call(call(call(cmd, getter), "schema"), "json")));
                    break;
                } catch (Exception e) {
                    // not this getter
                }
            }
            return fact;
        } catch (Exception e) {
            return null;
        }
    }

    private static Map<String, Object> writes(Object union) {
        List<Object> targets = new ArrayList<>();
        try {
            for (Object child : seq(call(union, "children"))) {
                Map<String, Object> fact = target(child, String.valueOf(call(child, "nodeName")));
                if (fact == null) {
                    return null;
                }
                targets.add(fact);
            }
        } catch (Exception e) {
            return null;
        }
        if (targets.isEmpty()) {
            return null;
        }
        Map<String, Object> fact = new LinkedHashMap<>();
        fact.put("writes", targets);
        return fact;
    }

    private static Map<String, Object> knownTarget(Object cmd, String name) throws Exception {
        if (name.equals("InsertIntoHadoopFsRelationCommand")) {
            Object table = opt(call(cmd, "catalogTable"));
            Map<String, Object> fact = new LinkedHashMap<>();
            if (table != null) {
                Map<String, Object> known = catalogTable(table);
                if (known == null) {
                    return null;
                }
                fact.putAll(known);
            }
            String path = qualify(String.valueOf(call(cmd, "outputPath")));
            if (!fact.containsKey("location")) {
                fact.put("location", path);
            }
            if (!fact.containsKey("table")) {
                List<String> paths = new ArrayList<>();
                paths.add(path);
                fact.put("paths", paths);
            }
            String format = shortNameOrNull(call(cmd, "fileFormat"));
            if (fact.get("format") == null && format != null) {
                fact.put("format", format);
            }
            fact.put("options", map(call(cmd, "options")));
            fact.put("mode", String.valueOf(call(cmd, "mode")));
            fact.put("partitions_only", partitionsOnly(cmd));
            return fact;
        }
        if (name.equals("CreateDataSourceTableAsSelectCommand") || name.equals("CreateHiveTableAsSelectCommand")
                || name.equals("OptimizedCreateHiveTableAsSelectCommand") || name.equals("InsertIntoHiveTable")) {
            for (String getter : new String[] {"table", "tableDesc"}) {
                Method m = method(cmd.getClass(), getter);
                if (m != null) {
                    Map<String, Object> fact = catalogTable(m.invoke(cmd));
                    if (fact != null && method(cmd.getClass(), "partition") != null) {
                        // InsertIntoHiveTable: into a partition spec, static or dynamic
                        fact.put("partitions_only", ((Number) call(call(cmd, "partition"), "size")).intValue() > 0);
                    }
                    return fact;
                }
            }
        }
        return null;
    }

    /** {@code readers/files.py partitions_only}: whether an overwrite replaces only some partitions. */
    private static boolean partitionsOnly(Object cmd) {
        try {
            return "Overwrite".equals(String.valueOf(call(cmd, "mode")))
                    && ((Number) call(call(cmd, "partitionColumns"), "size")).intValue() > 0
                    && (Boolean.TRUE.equals(call(cmd, "dynamicPartitionOverwrite"))
                        || ((Number) call(call(cmd, "staticPartitions"), "size")).intValue() > 0);
        } catch (Exception e) {
            return false;
        }
    }

    // -- values ---------------------------------------------------------------------------------
    /** {@code facts.qualify}: a path without a scheme is a local file. */
    static String qualify(String path) {
        int slash = path.indexOf('/');
        String first = slash < 0 ? path : path.substring(0, slash);
        return first.indexOf(':') >= 0 ? path : "file:" + path;
    }

    private static String shortName(Object format) throws Exception {
        String name = shortNameOrNull(format);
        return name != null ? name : String.valueOf(format).toLowerCase();
    }

    private static String shortNameOrNull(Object format) {
        try {
            return String.valueOf(call(format, "shortName"));
        } catch (Exception e) {
            return null;
        }
    }

    /** A Scala or Java map of strings as an ordered map (its iteration order). */
    static Map<String, String> map(Object m) {
        Map<String, String> out = new LinkedHashMap<>();
        if (m instanceof scala.collection.Iterable) {
            scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) m).iterator();
            while (it.hasNext()) {
                scala.Product2<?, ?> pair = (scala.Product2<?, ?>) it.next();
                out.put(String.valueOf(pair._1()), String.valueOf(pair._2()));
            }
        } else if (m instanceof Map) {
            for (Map.Entry<?, ?> e : ((Map<?, ?>) m).entrySet()) {
                out.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
            }
        }
        return out;
    }

    static Object opt(Object option) {
        if (option instanceof scala.Option) {
            scala.Option<?> o = (scala.Option<?>) option;
            return o.isDefined() ? o.get() : null;
        }
        return option;
    }

    static List<Object> seq(Object seq) {
        List<Object> out = new ArrayList<>();
        scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) seq).iterator();
        while (it.hasNext()) {
            out.add(it.next());
        }
        return out;
    }

    /** {@code target.name()}: a public no-argument method, found once per class. */
    static Object call(Object target, String name) throws Exception {
        Method m = method(target.getClass(), name);
        if (m == null) {
            throw new NoSuchMethodException(target.getClass().getName() + "." + name);
        }
        return m.invoke(target);
    }

    private static Method method(Class<?> cls, String name) {
        String key = cls.getName() + "#" + name;
        Method m = METHODS.get(key);
        if (m == null) {
            try {
                m = cls.getMethod(name);
                try {
                    m.setAccessible(true);  // a public method of a class that is not public
                } catch (RuntimeException e) {
                    // public classes need no access check
                }
            } catch (NoSuchMethodException e) {
                return null;
            }
            METHODS.put(key, m);
        }
        return m;
    }
}
