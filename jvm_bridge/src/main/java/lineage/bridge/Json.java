package lineage.bridge;

import java.util.Collection;
import java.util.Map;

/** Compact JSON text for the plan reader: strings escaped as JSON wants, plain values as they are. */
final class Json {
    private Json() {
    }

    /** Appends {@code s} as a JSON string. */
    static void string(StringBuilder out, String s) {
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

    /** Appends a value built of maps (string keys), collections, strings, numbers, booleans and null. */
    static void value(StringBuilder out, Object v) {
        if (v == null) {
            out.append("null");
        } else if (v instanceof String) {
            string(out, (String) v);
        } else if (v instanceof Boolean || v instanceof Number) {
            out.append(v);
        } else if (v instanceof Map) {
            out.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                string(out, String.valueOf(e.getKey()));
                out.append(':');
                value(out, e.getValue());
            }
            out.append('}');
        } else if (v instanceof Collection) {
            out.append('[');
            boolean first = true;
            for (Object e : (Collection<?>) v) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                value(out, e);
            }
            out.append(']');
        } else {
            string(out, String.valueOf(v));
        }
    }
}
