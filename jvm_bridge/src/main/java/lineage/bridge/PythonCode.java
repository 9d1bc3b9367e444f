package lineage.bridge;

import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Python code a plan runs, as the walk reads it: a {@code PythonFunction}'s pickled command (the
 * bytes PySpark ships to its workers, which toJSON writes as null).
 *
 * <p>The Python side ({@code lineage_listener/pycode/}) reads the command without running it.
 * Reflection only, so one class file serves Spark 3.5 and 4.x.
 */
final class PythonCode {
    private PythonCode() {
    }

    /** {@code {"command": base64 of the pickled command, "pythonVer": "3.11"}} of a {@code PythonFunction}. */
    static Map<String, Object> function(Object fn) throws Exception {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("command", Base64.getEncoder().encodeToString(bytes(Facts.call(fn, "command"))));
        try {
            out.put("pythonVer", String.valueOf(Facts.call(fn, "pythonVer")));
        } catch (Exception e) {
            // a PythonFunction without a version: the reader does without it
        }
        return out;
    }

    /** The bytes of a Scala {@code Seq[Byte]} (a wrapped array on 2.12 and 2.13, else element by element). */
    static byte[] bytes(Object seq) throws Exception {
        if (seq instanceof byte[]) {
            return (byte[]) seq;
        }
        for (String getter : new String[] {"unsafeArray", "array"}) {
            try {
                Object array = seq.getClass().getMethod(getter).invoke(seq);
                if (array instanceof byte[]) {
                    return (byte[]) array;
                }
            } catch (NoSuchMethodException e) {
                // not this kind of wrapped array
            }
        }
        java.util.List<Object> items = Facts.seq(seq);
        byte[] out = new byte[items.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = ((Number) items.get(i)).byteValue();
        }
        return out;
    }
}
