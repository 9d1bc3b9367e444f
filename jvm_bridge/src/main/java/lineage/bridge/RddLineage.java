package lineage.bridge;

import java.lang.reflect.Field;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Where a DataFrame made from a Python RDD ({@code df.rdd.map(...).toDF()},
 * {@code spark.createDataFrame(rdd, schema)}) comes from: the {@code LogicalRDD}'s RDD, followed down
 * its dependencies without computing anything.
 *
 * <ul>
 * <li>Each {@code PythonRDD} met holds the pickled pipeline of Python functions it runs (its
 *     {@code PythonFunction}): read by {@code lineage_listener/pycode/} without running it.</li>
 * <li>Below them, {@code df.rdd} ({@code Dataset.javaToPython}) left the {@code SQLExecutionRDD} its
 *     {@code QueryExecution} computed ({@code toRdd}). The source DataFrame is found among the
 *     objects Python holds through py4j (each gateway's bindings: the Python {@code DataFrame} holds
 *     its {@code Dataset}) as the one whose {@code QueryExecution} already holds that same
 *     {@code SQLExecutionRDD}; its analyzed plan gives the columns, exactly. Nothing is planned or
 *     run: a field is read only when already computed.</li>
 * <li>When no such DataFrame is held any more (it was a temporary, collected by Python), the leaf
 *     RDDs name the datasets read: files of a {@code FileScanRDD} (their root folders and the columns
 *     read) or a Hadoop input. Those are the lineage's floor: every column of the new DataFrame is
 *     taken to come from every column read, marked as a guess.</li>
 * </ul>
 * Reflection only, so one class file serves Spark 3.5 and 4.x.
 */
final class RddLineage {
    private static final Map<String, Field> FIELDS = new ConcurrentHashMap<>();
    /** The py4j gateways found so far (a JVM has few, and they live as long as it does). */
    private static final Set<Object> GATEWAYS = Collections.newSetFromMap(
            Collections.synchronizedMap(new java.util.WeakHashMap<>()));
    /** RDDs followed down per LogicalRDD before giving up (a long lineage of unions). */
    private static final int MAX_RDDS = 2000;

    private RddLineage() {
    }

    /** One LogicalRDD's facts, or null when no Python function made its RDD. */
    static Result read(Object logicalRdd) throws Exception {
        List<Map<String, Object>> functions = new ArrayList<>();
        List<Object> executions = new ArrayList<>();
        List<Object> leaves = new ArrayList<>();
        boolean[] shuffled = {false};
        walk(Facts.call(logicalRdd, "rdd"), (r, deps) -> {
            String kind = r.getClass().getSimpleName();
            if (kind.equals("PythonRDD")) {
                functions.add(PythonCode.function(field(r, "func")));
            } else if (kind.equals("SQLExecutionRDD")) {
                executions.add(r);
                return false;  // below it: the source DataFrame's executed plan
            }
            if (deps.isEmpty()) {
                leaves.add(r);
            }
            for (Object dep : deps) {
                shuffled[0] |= dep.getClass().getSimpleName().startsWith("Shuffle");
            }
            return true;
        });
        if (functions.isEmpty()) {
            return null;
        }
        Collections.reverse(functions);  // met from the DataFrame down: run from the source up
        Map<String, Object> fact = new LinkedHashMap<>();
        fact.put("functions", functions);
        if (shuffled[0]) {
            fact.put("shuffled", Boolean.TRUE);
        }
        Result result = new Result(fact);
        if (executions.size() == 1) {
            Object qe = heldQueryExecution(executions.get(0));
            if (qe != null) {
                result.source = Facts.call(qe, "analyzed");
                return result;
            }
            fact.put("reason", "the DataFrame its rows came from is no longer held by Python: the columns it "
                    + "read are known, not which of them each column comes from");
        } else if (executions.size() > 1) {
            fact.put("reason", "its rows come from several DataFrames");
        } else {
            fact.put("reason", "its rows do not come from a DataFrame");
        }
        for (Object e : executions) {
            walk(e, (r, deps) -> {
                if (deps.isEmpty()) {
                    leaves.add(r);
                }
                return true;
            });
        }
        List<Map<String, Object>> read = new ArrayList<>();
        for (Object leaf : leaves) {
            Map<String, Object> f = leafFact(leaf);
            if (f != null) {
                read.add(f);
            }
        }
        fact.put("leaves", read);
        return result;
    }

    /** What {@link #walk} asks of each RDD met: whether to go on below it. */
    private interface Visit {
        boolean visit(Object rdd, List<Object> dependencies) throws Exception;
    }

    /** Each RDD below {@code rdd} once, breadth first, down its dependencies (shuffles too). */
    private static void walk(Object rdd, Visit visit) throws Exception {
        ArrayDeque<Object> todo = new ArrayDeque<>();
        Map<Object, Boolean> seen = new IdentityHashMap<>();
        todo.add(rdd);
        while (!todo.isEmpty() && seen.size() < MAX_RDDS) {
            Object r = todo.poll();
            if (seen.put(r, Boolean.TRUE) != null) {
                continue;
            }
            List<Object> deps = new ArrayList<>();
            for (Object dep : Facts.seq(Facts.call(r, "dependencies"))) {
                deps.add(Facts.call(dep, "rdd"));
            }
            if (visit.visit(r, deps)) {
                todo.addAll(deps);
            }
        }
    }

    /** A LogicalRDD's facts and, when its source DataFrame was found, that DataFrame's analyzed plan. */
    static final class Result {
        final Map<String, Object> fact;
        Object source;

        Result(Map<String, Object> fact) {
            this.fact = fact;
        }
    }

    // -- the source DataFrame --------------------------------------------------------------
    /** The QueryExecution, among those of the Datasets Python holds, that computed {@code execution}. */
    static Object heldQueryExecution(Object execution) {
        for (int attempt = 0; attempt < 2; attempt++) {
            if (attempt == 1 || GATEWAYS.isEmpty()) {
                findGateways();
            }
            List<Object> gateways;
            synchronized (GATEWAYS) {
                gateways = new ArrayList<>(GATEWAYS);
            }
            for (Object gateway : gateways) {
                Object found = search(gateway, execution);
                if (found != null) {
                    return found;
                }
            }
        }
        return null;
    }

    private static Object search(Object gateway, Object execution) {
        Map<?, ?> bindings;
        try {
            bindings = (Map<?, ?>) Facts.call(gateway, "getBindings");
        } catch (Exception e) {
            return null;
        }
        for (Object value : new ArrayList<>(bindings.values())) {
            if (value == null || !value.getClass().getSimpleName().equals("Dataset")) {
                continue;
            }
            try {
                Object qe = Facts.call(value, "queryExecution");
                if (computedRdd(qe) == execution) {
                    return qe;
                }
            } catch (Exception e) {
                // another kind of object: not the one
            }
        }
        return null;
    }

    /** The {@code toRdd} a QueryExecution already computed, without computing it (null when not yet). */
    static Object computedRdd(Object qe) throws Exception {
        Field plain = fieldOrNull(qe.getClass(), "toRdd");  // Spark 3.5: a lazy val's field
        if (plain != null) {
            return plain.get(qe);
        }
        Field lazy = fieldOrNull(qe.getClass(), "lazyToRdd");  // Spark 4: a LazyTry, its Try once computed
        if (lazy == null) {
            return null;
        }
        Object tryValue = lazy.get(qe);
        Field inner = tryValue == null ? null : fieldOrNull(tryValue.getClass(), "tryT");
        Object computed = inner == null ? null : inner.get(tryValue);
        if (computed == null || !computed.getClass().getSimpleName().equals("Success")) {
            return null;
        }
        return Facts.call(computed, "value");
    }

    /** Every py4j gateway of this JVM: PySpark's (the user's DataFrames) and any other. */
    private static void findGateways() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] threads = new Thread[root.activeCount() + 16];
        int n = root.enumerate(threads, true);
        for (int i = 0; i < n; i++) {
            Object task = runnable(threads[i]);
            if (task == null || !task.getClass().getName().startsWith("py4j.")) {
                continue;
            }
            Object gateway = null;
            try {
                gateway = Facts.call(task, "getGateway");  // GatewayServer, ClientServer's JavaServer
            } catch (Exception e) {
                try {
                    gateway = field(task, "gateway");  // a connection's thread
                } catch (Exception ignored) {
                    // not a py4j class holding a gateway
                }
            }
            if (gateway != null) {
                GATEWAYS.add(gateway);
            }
        }
    }

    /** What a thread runs: its {@code target} (Java 17), or its holder's {@code task} (Java 19+). */
    private static Object runnable(Thread t) {
        try {
            Field target = fieldOrNull(Thread.class, "target");
            if (target != null) {
                return target.get(t);
            }
            Field holder = fieldOrNull(Thread.class, "holder");
            Object h = holder == null ? null : holder.get(t);
            Field task = h == null ? null : fieldOrNull(h.getClass(), "task");
            return task == null ? null : task.get(h);
        } catch (Exception | LinkageError e) {  // java.lang not opened to this module: no gateway found
            return null;
        }
    }

    // -- the floor: datasets the leaf RDDs read ------------------------------------------------
    /** The dataset a leaf RDD reads ({@code paths}, {@code columns}), or null (in-memory data). */
    static Map<String, Object> leafFact(Object rdd) {
        String kind = rdd.getClass().getSimpleName();
        try {
            if (kind.equals("FileScanRDD")) {
                Set<String> roots = new LinkedHashSet<>();
                for (Object partition : Facts.seq(field(rdd, "filePartitions"))) {
                    for (Object file : (Object[]) Facts.call(partition, "files")) {
                        roots.add(folder(path(Facts.call(file, "filePath"))));
                    }
                }
                if (roots.isEmpty()) {
                    return null;
                }
                Map<String, Object> fact = new LinkedHashMap<>();
                fact.put("paths", new ArrayList<>(roots));
                List<String> columns = new ArrayList<>();
                for (Object name : (Object[]) Facts.call(field(rdd, "readSchema"), "fieldNames")) {
                    columns.add(String.valueOf(name));
                }
                fact.put("columns", columns);
                return fact;
            }
            if (kind.equals("HadoopRDD") || kind.equals("NewHadoopRDD")) {
                Object conf = kind.equals("HadoopRDD") ? Facts.call(rdd, "getJobConf") : Facts.call(rdd, "getConf");
                Object dirs = conf.getClass().getMethod("get", String.class)
                        .invoke(conf, "mapreduce.input.fileinputformat.inputdir");
                if (dirs == null) {
                    return null;
                }
                List<String> paths = new ArrayList<>();
                for (String p : String.valueOf(dirs).split(",")) {
                    paths.add(Facts.qualify(p.trim()));
                }
                Map<String, Object> fact = new LinkedHashMap<>();
                fact.put("paths", paths);
                fact.put("columns", Collections.singletonList("value"));
                return fact;
            }
        } catch (Exception e) {
            return null;
        }
        return null;
    }

    /** A file's path as Hadoop writes it ({@code file:/x}, decoded), from a {@code SparkPath} or a string. */
    private static String path(Object filePath) {
        try {
            return String.valueOf(Facts.call(filePath, "toPath"));
        } catch (Exception e) {
            String text = String.valueOf(filePath);
            return text.startsWith("file:///") ? "file:/" + text.substring("file:///".length()) : text;
        }
    }

    /** The folder a data file belongs to: its directory, without partition directories ({@code k=v}). */
    static String folder(String file) {
        String path = Facts.qualify(file);
        int slash = path.lastIndexOf('/');
        String dir = slash > 0 ? path.substring(0, slash) : path;
        while (true) {
            int s = dir.lastIndexOf('/');
            if (s <= 0 || dir.indexOf('=', s) < 0) {
                return dir;
            }
            dir = dir.substring(0, s);
        }
    }

    // -- reflection -------------------------------------------------------------------------------
    static Object field(Object target, String name) throws Exception {
        Field f = fieldOrNull(target.getClass(), name);
        if (f == null) {
            throw new NoSuchFieldException(target.getClass().getName() + "." + name);
        }
        return f.get(target);
    }

    private static Field fieldOrNull(Class<?> cls, String name) {
        String key = cls.getName() + "#" + name;
        Field found = FIELDS.get(key);
        if (found != null) {
            return found;
        }
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            for (Field f : c.getDeclaredFields()) {
                if (f.getName().equals(name) || f.getName().endsWith("$$" + name)) {
                    try {
                        f.setAccessible(true);
                    } catch (RuntimeException e) {
                        return null;  // a module that does not open it
                    }
                    FIELDS.put(key, f);
                    return f;
                }
            }
        }
        return null;
    }
}
