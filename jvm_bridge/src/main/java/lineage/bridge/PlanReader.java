package lineage.bridge;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reads an analyzed plan on the JVM into a compact JSON text for the Python walker.
 *
 * <p>The text says what {@code LogicalPlan.toJSON()} says, field by field (the same
 * field names and values, by the same rules: Spark's own {@code parseToJson} writes every
 * value that is not a tree), but each distinct {@code AttributeReference} is written once
 * in a table and referred to by its index wherever it occurs. A 300-step
 * {@code withColumn} chain repeats ~90,000 attributes: toJSON writes 13.7 MB, this ~0.5 MB.
 *
 * <pre>{"v":3,"attrs":[{attribute node}...],"facts":{...},"plan":{"@t":[node or attribute index...]}}</pre>
 *
 * A tree (a plan, or an expression in a field) is {@code {"@t": [...]}}: its pre-order
 * list of nodes, as toJSON writes it, where an integer stands for an attribute of the table.
 * Products of the classes given to {@link #keep} are written with only the fields named there
 * (an {@code ExprId} as its id, a {@code CatalogTable} as its identity): the walk reads nothing
 * else of them, and they are most of toJSON's text. {@link #encodeQuery} also reads, in the same
 * call, the facts the plan JSON leaves out ({@link Facts}): {@code "facts"} is an object (a JSON
 * text inside a string would put a backslash before each of its quotes, which py4j escapes on
 * the way out and the Python side unescapes again) holding {@code leaves}, a list of [first output
 * id, facts or null] per source leaf, {@code nulls}, how many node fields were written as null,
 * and the write {@code target}'s facts when they were read. A Python function (a UDF's {@code func},
 * which toJSON writes as null) is written as its pickled command ({@link PythonCode#function}).
 * Only reflection is used against Spark and Scala (one class file for Spark 3.5 / Scala 2.12
 * and Spark 4.x / Scala 2.13). Any failure throws: the caller falls back to toJSON.
 */
public final class PlanReader {
    /** Bumped when the encoding changes (the Python decoder checks it). */
    public static final int VERSION = 4;
    private static final String ATTRIBUTE = "org.apache.spark.sql.catalyst.expressions.AttributeReference";
    private static final String PYTHON_FUNCTION = "org.apache.spark.api.python.PythonFunction";
    private static final Map<Class<?>, List<String>> NAMES = new ConcurrentHashMap<>();
    private static volatile Method parseToJson;
    private static volatile Method constructorNames;
    private static volatile Object reflection;

    private StringBuilder out = new StringBuilder(1 << 16);
    private final StringBuilder attrs = new StringBuilder(1 << 12);
    private final Map<Object, Integer> attrIndex = new HashMap<>();
    private final Class<?> treeNode;
    /** Class name -> the only fields written of its products ({@link #keep}). */
    private final Map<String, List<String>> kept = new HashMap<>();
    /** Short class names of the leaves whose facts {@link #encodeQuery} reads. */
    private final java.util.Set<String> sourceLeaves = new java.util.HashSet<>();
    /** First output id -> facts (null: for the Python side to read) of the source leaves met. */
    private final Map<Long, Map<String, Object>> leaves = new java.util.LinkedHashMap<>();
    private boolean readLeaves;
    /** What each source leaf met reads, and the leaf itself, by identity -> its key ({@link Metrics}). */
    private final Map<Object, Long> relations = Metrics.byIdentity();
    private final Map<Object, Long> leafNodes = Metrics.byIdentity();
    /** The QueryExecution whose statistics {@link #encodeQuery} reads with its plan (null: none). */
    private Object measured;
    private int nulls;
    /** Short class name -> fields whose null the Python side must repair ({@link #watchNulls}). */
    private final Map<String, java.util.Set<String>> watched = new HashMap<>();

    public PlanReader() throws ClassNotFoundException {
        this.treeNode = Class.forName("org.apache.spark.sql.catalyst.trees.TreeNode", false,
                PlanReader.class.getClassLoader());
        RecursionSteps.watchActive();  // before the first query: its steps are known too
    }

    /** The compact text of {@code plan} (a TreeNode). */
    public static String read(Object plan) throws Exception {
        return new PlanReader().encode(plan);
    }

    /**
     * Instance entry point (py4j calls it on an instance made through a child class loader).
     * Synchronized: one instance serves every Python thread of a gateway, and its buffers are
     * reused from plan to plan.
     */
    public synchronized String encode(Object plan) throws Exception {
        return encode(plan, false, null);
    }

    /**
     * The compact text of {@code qe}'s analyzed plan with the facts of its source leaves and,
     * when {@code target} is true, of its write target (both as {@link Facts} reads them).
     */
    public synchronized String encodeQuery(Object qe, boolean target) throws Exception {
        Object plan = Facts.call(qe, "analyzed");
        measured = qe;
        try {
            return encode(plan, true, target ? Facts.call(plan, "nodeName") : null);
        } finally {
            measured = null;
        }
    }

    /** {@link Facts#target} of {@code qe}'s analyzed plan as JSON ({@code null}: the Python side reads it). */
    public String targetOf(Object qe) throws Exception {
        Object plan = Facts.call(qe, "analyzed");
        StringBuilder text = new StringBuilder(256);
        Json.value(text, Facts.target(plan, String.valueOf(Facts.call(plan, "nodeName"))));
        return text.toString();
    }

    /** {@link Facts#head}: application id, QueryExecution id, root node name and SQL text, as JSON. */
    public String head(Object qe) throws Exception {
        StringBuilder text = new StringBuilder(256);
        Json.value(text, Facts.head(qe));
        return text.toString();
    }

    /**
     * The {@code LogicalRDD} leaves of {@code plan} that Python functions made ({@link RddLineage}):
     * per leaf, {@code [first output id, its facts as JSON, the analyzed plan of the DataFrame its rows
     * came from (or null), that plan's compact text with its leaves' facts (or null)]}.
     */
    public synchronized List<Object> rdds(Object plan) throws Exception {
        List<Object> out = new ArrayList<>();
        for (Object leaf : list(Facts.call(plan, "collectLeaves"))) {
            if (!leaf.getClass().getSimpleName().equals("LogicalRDD")) {
                continue;
            }
            List<Object> output = list(Facts.call(leaf, "output"));
            RddLineage.Result found = output.isEmpty() ? null : RddLineage.read(leaf);
            if (found == null) {
                continue;
            }
            Object id = Facts.call(Facts.call(output.get(0), "exprId"), "id");
            StringBuilder fact = new StringBuilder(256);
            Json.value(fact, found.fact);
            String source = found.source == null ? null : new PlanReader(this).encode(found.source, true, null);
            out.add(java.util.Arrays.asList(((Number) id).longValue(), fact.toString(), found.source, source));
        }
        return out;
    }

    /** A reader told what this one was told (a plan read inside another plan's read). */
    private PlanReader(PlanReader settings) throws ClassNotFoundException {
        this();
        kept.putAll(settings.kept);
        sourceLeaves.addAll(settings.sourceLeaves);
        watched.putAll(settings.watched);
    }

    /** Products of class {@code className} are written with only {@code fields} (comma-separated). */
    public synchronized void keep(String className, String fields) {
        kept.put(className, java.util.Arrays.asList(fields.split(",")));
    }

    /** Count nulls written for field {@code fields} (comma-separated) of nodes of short class name {@code name}. */
    public synchronized void watchNulls(String name, String fields) {
        watched.put(name, new java.util.HashSet<>(java.util.Arrays.asList(fields.split(","))));
    }

    /** Short class names of the source leaves whose facts {@link #encodeQuery} reads (comma-separated). */
    public synchronized void sourceLeaves(String names) {
        sourceLeaves.clear();
        sourceLeaves.addAll(java.util.Arrays.asList(names.split(",")));
    }

    private String encode(Object plan, boolean withFacts, Object targetName) throws Exception {
        out.setLength(0);
        attrs.setLength(0);
        attrIndex.clear();
        leaves.clear();
        relations.clear();
        leafNodes.clear();
        readLeaves = withFacts;
        nulls = 0;
        tree(plan);
        String body = out.toString();
        StringBuilder text = new StringBuilder(body.length() + attrs.length() + 256);
        text.append("{\"v\":").append(VERSION).append(",\"attrs\":[").append(attrs).append(']');
        if (withFacts) {
            Map<String, Object> facts = new java.util.LinkedHashMap<>();
            List<Object> found = new ArrayList<>();
            for (Map.Entry<Long, Map<String, Object>> e : leaves.entrySet()) {
                found.add(java.util.Arrays.asList(e.getKey(), e.getValue()));
            }
            facts.put("leaves", found);
            facts.put("nulls", nulls);
            if (targetName != null) {
                Map<String, Object> target = Facts.target(plan, String.valueOf(targetName));
                if (target != null) {
                    facts.put("target", target);
                }
            }
            Map<String, Object> statistics = measured == null ? null : Metrics.of(measured, relations, leafNodes);
            if (statistics != null) {
                facts.put("statistics", statistics);
            }
            text.append(",\"facts\":");
            Json.value(text, facts);
        }
        text.append(",\"plan\":").append(body).append('}');
        leaves.clear();
        relations.clear();
        leafNodes.clear();
        return text.toString();
    }

    /** Records the facts of {@code node} when it is a source leaf (keyed by its first output's id). */
    private void sourceLeaf(Object node) {
        String name = node.getClass().getSimpleName();
        if (!sourceLeaves.contains(name)) {
            return;
        }
        try {
            List<Object> output = list(Facts.call(node, "output"));
            if (output.isEmpty()) {
                return;
            }
            Object id = Facts.call(Facts.call(output.get(0), "exprId"), "id");
            Long key = ((Number) id).longValue();
            if (!leaves.containsKey(key)) {
                leaves.put(key, Facts.leaf(node, name));
            }
            if (measured != null) {
                leafNodes.put(node, key);
                Object relation = Metrics.relationOf(node, name);
                if (relation != null) {
                    relations.put(relation, key);
                }
            }
        } catch (Exception e) {
            // no id: the Python side finds this leaf in the plan and reads it
        }
    }

    // -- trees ------------------------------------------------------------------------
    private void tree(Object root) throws Exception {
        out.append("{\"@t\":[");
        boolean first = true;
        ArrayList<Object> stack = new ArrayList<>();
        stack.add(root);
        while (!stack.isEmpty()) {
            Object node = stack.remove(stack.size() - 1);
            if (!first) {
                out.append(',');
            }
            first = false;
            List<Object> kids = children(node);
            if (kids.isEmpty() && methods(node.getClass()).attribute) {
                out.append(attribute(node));
            } else {
                if (readLeaves && kids.isEmpty()) {
                    sourceLeaf(node);
                }
                item(node, kids);
            }
            for (int i = kids.size() - 1; i >= 0; i--) {
                stack.add(kids.get(i));
            }
        }
        out.append("]}");
    }

    private int attribute(Object attr) throws Exception {
        Integer known = attrIndex.get(attr);
        if (known != null) {
            return known;
        }
        int index = attrIndex.size();
        attrIndex.put(attr, index);
        StringBuilder main = out;
        out = new StringBuilder(256);
        try {
            item(attr, children(attr));
            if (index > 0) {
                attrs.append(',');
            }
            attrs.append(out);
        } finally {
            out = main;
        }
        return index;
    }

    /** One node as toJSON writes it: class, num-children, then its fields. */
    private void item(Object node, List<Object> kids) throws Exception {
        Methods m = methods(node.getClass());
        out.append("{\"class\":");
        string(node.getClass().getName());
        out.append(",\"num-children\":").append(kids.size());
        {
            if (m.ownFields) {  // the class writes its own fields (Literal...)
                Object fields = m.jsonFields.invoke(node);
                scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) fields).iterator();
                while (it.hasNext()) {
                    scala.Product2<?, ?> pair = (scala.Product2<?, ?>) it.next();
                    fieldJValue((String) pair._1(), pair._2());
                }
                out.append('}');
                return;
            }
            List<String> names = m.names();
            List<Object> values = new ArrayList<>();
            scala.collection.Iterator<?> it = ((scala.Product) node).productIterator();
            while (it.hasNext()) {
                values.add(it.next());
            }
            Object other = m.otherCopyArgs.invoke(node);
            scala.collection.Iterator<?> more = ((scala.collection.Iterable<?>) other).iterator();
            while (more.hasNext()) {
                values.add(more.next());
            }
            if (names.size() != values.size()) {
                throw new IllegalStateException("field count differs for " + node.getClass().getName());
            }
            java.util.Set<String> watch = watched.isEmpty() ? null : watched.get(node.getClass().getSimpleName());
            for (int i = 0; i < names.size(); i++) {
                field(names.get(i), values.get(i), kids, watch);
            }
        }
        out.append('}');
    }

    private void field(String name, Object value, List<Object> kids, java.util.Set<String> watch)
            throws Exception {
        if (treeNode.isInstance(value)) {
            int index = indexOf(kids, value);
            if (index >= 0) {
                key(name);
                out.append(index);
                return;
            }
        }
        if (value instanceof scala.collection.Seq) {  // Spark's `value: Seq[BaseType]` (erased)
            List<Object> elems = list(value);
            boolean allChildren = true;
            for (Object e : elems) {
                if (indexOf(kids, e) < 0) {
                    allChildren = false;
                    break;
                }
            }
            if (allChildren) {
                key(name);
                out.append('[');
                for (int i = 0; i < elems.size(); i++) {
                    if (i > 0) {
                        out.append(',');
                    }
                    out.append(indexOf(kids, elems.get(i)));
                }
                out.append(']');
                return;
            }
        }
        int mark = out.length();
        key(name);
        if (!value(value)) {
            out.setLength(mark);  // JNothing (None): toJSON leaves the field out
        } else if (watch != null && watch.contains(name) && endsWithNull()) {
            nulls++;  // a field toJSON cannot write (a Scala Vector...): the Python side reads it
        }
    }

    /** Writes ``value`` as parseToJson would; false when it writes nothing (JNothing). */
    private boolean value(Object v) throws Exception {
        if (v == null) {
            out.append("null");
            return true;
        }
        if (v instanceof Boolean || v instanceof Integer || v instanceof Long || v instanceof Short
                || v instanceof Byte) {
            out.append(v);
            return true;
        }
        if (v instanceof String) {
            string((String) v);
            return true;
        }
        if (treeNode.isInstance(v)) {
            tree(v);
            return true;
        }
        if (isA(v, PYTHON_FUNCTION)) {  // toJSON writes null: the walk reads the function's command
            Json.value(out, PythonCode.function(v));
            return true;
        }
        if (v instanceof scala.Option) {
            scala.Option<?> o = (scala.Option<?>) v;
            return o.isDefined() && value(o.get());
        }
        if (v instanceof scala.collection.Seq && !isDataType(v)) {
            List<Object> elems = list(v);
            boolean products = true;
            for (Object e : elems) {
                if (!(e instanceof scala.Product) && !isDataType(e) && !isPartitioning(e)) {
                    products = false;
                    break;
                }
            }
            if (products) {
                out.append('[');
                boolean first = true;
                for (Object e : elems) {
                    int mark = out.length();
                    if (!first) {
                        out.append(',');
                    }
                    if (value(e)) {
                        first = false;
                    } else {
                        out.setLength(mark);
                    }
                }
                out.append(']');
                return true;
            }
        }
        if (v instanceof scala.Product && !kept.isEmpty()) {
            List<String> only = kept.get(v.getClass().getName());
            if (only != null) {
                return keptProduct(v, only);
            }
        }
        return jvalue(parse(v));  // everything else: Spark's own rules
    }

    private boolean endsWithNull() {
        int n = out.length();
        return n >= 5 && out.charAt(n - 5) == ':' && out.charAt(n - 4) == 'n' && out.charAt(n - 3) == 'u'
                && out.charAt(n - 2) == 'l' && out.charAt(n - 1) == 'l';
    }

    /** A product as parseToJson writes it, with only the fields in {@code only} (no product-class). */
    private boolean keptProduct(Object v, List<String> only) throws Exception {
        List<String> names = names(v.getClass());
        List<Object> values = new ArrayList<>();
        scala.collection.Iterator<?> it = ((scala.Product) v).productIterator();
        while (it.hasNext()) {
            values.add(it.next());
        }
        if (names.size() != values.size()) {
            return jvalue(parse(v));
        }
        out.append('{');
        boolean first = true;
        for (int i = 0; i < names.size(); i++) {
            if (!only.contains(names.get(i))) {
                continue;
            }
            int mark = out.length();
            if (!first) {
                out.append(',');
            }
            key0(names.get(i));
            if (value(values.get(i))) {
                first = false;
            } else {
                out.setLength(mark);
            }
        }
        out.append('}');
        return true;
    }

    // -- Spark's parseToJson and json4s values ------------------------------------------
    private Object parse(Object v) throws Exception {
        Method m = parseToJson;
        if (m == null) {
            for (Method candidate : treeNode.getDeclaredMethods()) {
                if (candidate.getName().endsWith("parseToJson") && candidate.getParameterTypes().length == 1) {
                    candidate.setAccessible(true);
                    m = candidate;
                }
            }
            if (m == null) {
                throw new IllegalStateException("TreeNode.parseToJson not found");
            }
            parseToJson = m;
        }
        // parseToJson is an instance method that reads no state of its node; any node will do.
        return m.invoke(anyNode, v);
    }

    private Object anyNode;

    private void fieldJValue(String name, Object jv) throws Exception {
        int mark = out.length();
        key(name);
        if (!jvalue(jv)) {
            out.setLength(mark);
        }
    }

    /** Renders a json4s JValue as compact JSON (by class name: json4s 3.7 and 4.0 differ in packages). */
    private boolean jvalue(Object jv) throws Exception {
        if (jv == null) {
            out.append("null");
            return true;
        }
        String kind = jv.getClass().getSimpleName();
        if (kind.endsWith("$")) {
            kind = kind.substring(0, kind.length() - 1);
        }
        switch (kind) {
            case "JNothing":
                return false;
            case "JNull":
                out.append("null");
                return true;
            case "JString":
                string((String) get(jv, "s"));
                return true;
            case "JBool":
                out.append(get(jv, "value"));
                return true;
            case "JInt":
            case "JLong":
            case "JDecimal":
                out.append(get(jv, "num"));
                return true;
            case "JDouble":
                double d = (Double) get(jv, "num");
                out.append(Double.isNaN(d) || Double.isInfinite(d) ? "null" : Double.toString(d));
                return true;
            case "JArray":
            case "JSet": {
                Object items = get(jv, kind.equals("JArray") ? "arr" : "set");
                out.append('[');
                boolean first = true;
                for (Object e : list(items)) {
                    int mark = out.length();
                    if (!first) {
                        out.append(',');
                    }
                    if (jvalue(e)) {
                        first = false;
                    } else {
                        out.setLength(mark);
                    }
                }
                out.append(']');
                return true;
            }
            case "JObject": {
                out.append('{');
                boolean first = true;
                List<Object> pairs = list(get(jv, "obj"));
                List<String> only = keptOf(pairs);
                for (Object e : pairs) {
                    scala.Product2<?, ?> pair = (scala.Product2<?, ?>) e;
                    if (only != null && !only.contains((String) pair._1())) {
                        continue;  // a trimmed product inside a value Spark wrote (a CaseWhen branch...)
                    }
                    int mark = out.length();
                    if (!first) {
                        out.append(',');
                    }
                    key0((String) pair._1());
                    if (jvalue(pair._2())) {
                        first = false;
                    } else {
                        out.setLength(mark);
                    }
                }
                out.append('}');
                return true;
            }
            default:
                throw new IllegalStateException("unknown json4s value " + jv.getClass().getName());
        }
    }

    /** The kept fields of a json4s object that is a product of a {@link #keep} class, else null. */
    private List<String> keptOf(List<Object> pairs) throws Exception {
        if (kept.isEmpty() || pairs.isEmpty()) {
            return null;
        }
        scala.Product2<?, ?> first = (scala.Product2<?, ?>) pairs.get(0);
        if (!"product-class".equals(first._1()) || !first._2().getClass().getSimpleName().startsWith("JString")) {
            return null;
        }
        return kept.get((String) get(first._2(), "s"));
    }

    // -- reflection helpers ---------------------------------------------------------------
    private static Object get(Object target, String accessor) throws Exception {
        return target.getClass().getMethod(accessor).invoke(target);
    }

    private List<Object> children(Object node) throws Exception {
        if (anyNode == null) {
            anyNode = node;
        }
        return list(methods(node.getClass()).children.invoke(node));
    }

    /** What reading one node class needs, looked up once per class. */
    private static final class Methods {
        final Class<?> cls;
        final Method children;
        final Method jsonFields;
        final Method otherCopyArgs;
        final boolean ownFields;
        final boolean attribute;
        private volatile List<String> names;

        Methods(Class<?> cls, Class<?> treeNode) throws Exception {
            this.cls = cls;
            this.children = open(cls.getMethod("children"));
            this.jsonFields = open(cls.getMethod("jsonFields"));
            this.otherCopyArgs = open(cls.getMethod("otherCopyArgs"));
            this.ownFields = jsonFields.getDeclaringClass() != treeNode;
            this.attribute = cls.getName().equals(ATTRIBUTE) && !ownFields;
        }

        List<String> names() throws Exception {
            List<String> n = names;
            if (n == null) {
                n = PlanReader.names(cls);
                names = n;
            }
            return n;
        }
    }

    private static Method open(Method m) {
        try {
            m.setAccessible(true);  // a public method of a class that is not public
        } catch (RuntimeException e) {
            // keep it as it is: public classes need no access check
        }
        return m;
    }

    private static final Map<Class<?>, Methods> METHODS = new ConcurrentHashMap<>();

    private Methods methods(Class<?> cls) throws Exception {
        Methods m = METHODS.get(cls);
        if (m == null) {
            m = new Methods(cls, treeNode);
            METHODS.put(cls, m);
        }
        return m;
    }

    private static int indexOf(List<Object> kids, Object value) {
        for (int i = 0; i < kids.size(); i++) {  // Seq.indexOf: by equality, the first one
            Object k = kids.get(i);
            if (k == value || k.equals(value)) {
                return i;
            }
        }
        return -1;
    }

    private static List<Object> list(Object seq) {
        return Facts.seq(seq);
    }

    private static boolean isDataType(Object v) {
        return isA(v, "org.apache.spark.sql.types.DataType");
    }

    private static boolean isPartitioning(Object v) {
        return isA(v, "org.apache.spark.sql.catalyst.plans.physical.Partitioning");
    }

    private static final Map<String, Class<?>> CLASSES = new ConcurrentHashMap<>();

    private static boolean isA(Object v, String name) {
        Class<?> c = CLASSES.get(name);
        if (c == null) {
            try {
                c = Class.forName(name, false, v.getClass().getClassLoader() != null
                        ? v.getClass().getClassLoader() : PlanReader.class.getClassLoader());
            } catch (ClassNotFoundException e) {
                c = Void.class;
            }
            CLASSES.put(name, c);
        }
        return c.isInstance(v);
    }

    private static List<String> names(Class<?> cls) throws Exception {
        List<String> known = NAMES.get(cls);
        if (known != null) {
            return known;
        }
        if (constructorNames == null) {
            Class<?> module = Class.forName("org.apache.spark.sql.catalyst.ScalaReflection$", true,
                    cls.getClassLoader());
            reflection = module.getField("MODULE$").get(null);
            constructorNames = module.getMethod("getConstructorParameterNames", Class.class);
        }
        List<String> names = new ArrayList<>();
        for (Object n : list(constructorNames.invoke(reflection, cls))) {
            names.add((String) n);
        }
        NAMES.put(cls, names);
        return names;
    }

    // -- JSON text ----------------------------------------------------------------------
    private void key(String name) {
        out.append(',');
        key0(name);
    }

    private void key0(String name) {
        string(name);
        out.append(':');
    }

    private void string(String s) {
        Json.string(out, s);
    }
}
