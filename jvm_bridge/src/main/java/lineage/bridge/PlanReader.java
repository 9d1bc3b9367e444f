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
 * <pre>{"v":1,"attrs":[{attribute node}...],"plan":{"@t":[node or attribute index...]}}</pre>
 *
 * A tree (a plan, or an expression in a field) is {@code {"@t": [...]}}: its pre-order
 * list of nodes, as toJSON writes it, where an integer stands for an attribute of the table.
 * Only reflection is used against Spark and Scala (one class file for Spark 3.5 / Scala 2.12
 * and Spark 4.x / Scala 2.13). Any failure throws: the caller falls back to toJSON.
 */
public final class PlanReader {
    /** Bumped when the encoding changes (the Python decoder checks it). */
    public static final int VERSION = 1;
    private static final String ATTRIBUTE = "org.apache.spark.sql.catalyst.expressions.AttributeReference";
    private static final Map<Class<?>, List<String>> NAMES = new ConcurrentHashMap<>();
    private static volatile Method parseToJson;
    private static volatile Method constructorNames;
    private static volatile Object reflection;

    private StringBuilder out = new StringBuilder(1 << 16);
    private final StringBuilder attrs = new StringBuilder(1 << 12);
    private final Map<Object, Integer> attrIndex = new HashMap<>();
    private final Class<?> treeNode;

    public PlanReader() throws ClassNotFoundException {
        this.treeNode = Class.forName("org.apache.spark.sql.catalyst.trees.TreeNode", false,
                PlanReader.class.getClassLoader());
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
        out.setLength(0);
        attrs.setLength(0);
        attrIndex.clear();
        tree(plan);
        String body = out.toString();
        return "{\"v\":" + VERSION + ",\"attrs\":[" + attrs + "],\"plan\":" + body + "}";
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
            for (int i = 0; i < names.size(); i++) {
                field(names.get(i), values.get(i), kids);
            }
        }
        out.append('}');
    }

    private void field(String name, Object value, List<Object> kids) throws Exception {
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
        return jvalue(parse(v));  // everything else: Spark's own rules
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
                for (Object e : list(get(jv, "obj"))) {
                    scala.Product2<?, ?> pair = (scala.Product2<?, ?>) e;
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
        List<Object> out = new ArrayList<>();
        scala.collection.Iterator<?> it = ((scala.collection.Iterable<?>) seq).iterator();
        while (it.hasNext()) {
            out.add(it.next());
        }
        return out;
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
        out.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"':
                    out.append("\\\"");
                    break;
                case '\\':
                    out.append("\\\\");
                    break;
                case '\n':
                    out.append("\\n");
                    break;
                case '\r':
                    out.append("\\r");
                    break;
                case '\t':
                    out.append("\\t");
                    break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        out.append('"');
    }
}
