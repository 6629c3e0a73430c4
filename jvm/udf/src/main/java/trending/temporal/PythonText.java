package trending.temporal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.math.MathContext;
import java.math.RoundingMode;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * Values as Python writes them: {@link #repr} (in error messages) and {@link #json} ({@code
 * json.dumps} with its defaults, or with {@code sort_keys=True}). A value is null, a {@link
 * Boolean}, a {@link Long}, {@link BigInteger} or {@link Double}, a {@link String}, a {@link
 * List} or a {@link Map} with string keys; anything else is written with {@code toString()}.
 */
public final class PythonText {
  private PythonText() {}

  /** Python's {@code repr(value)} of the value as Python's {@code json.loads} gives it. */
  public static String repr(Object value) {
    StringBuilder out = new StringBuilder();
    repr(value, out);
    return out.toString();
  }

  /** Python's {@code json.dumps(value, sort_keys=sortKeys)}. */
  public static String json(Object value, boolean sortKeys) {
    StringBuilder out = new StringBuilder();
    json(value, sortKeys, out);
    return out.toString();
  }

  /** Python's {@code repr(float)}: the shortest digits that read back as {@code d}. */
  public static String floatRepr(double d) {
    if (Double.isNaN(d)) {
      return "nan";
    }
    if (Double.isInfinite(d)) {
      return d > 0 ? "inf" : "-inf";
    }
    if (d == 0) {
      return 1 / d < 0 ? "-0.0" : "0.0";
    }
    BigDecimal exact = new BigDecimal(d);
    BigDecimal shortest = exact;
    for (int digits = 1; digits <= 17; digits++) {
      BigDecimal rounded = exact.round(new MathContext(digits, RoundingMode.HALF_EVEN));
      if (Double.parseDouble(rounded.toString()) == d) {
        shortest = rounded;
        break;
      }
    }
    String digits = shortest.unscaledValue().abs().toString().replaceFirst("0+$", "");
    if (digits.isEmpty()) {
      digits = "0";
    }
    // value = 0.DIGITS * 10^point
    int point = shortest.precision() - shortest.scale();
    String sign = d < 0 ? "-" : "";
    if (point > -4 && point <= 16) {
      return sign + fixed(digits, point);
    }
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    int exponent = point - 1;
    String exp = String.format("%02d", Math.abs(exponent));
    return sign + mantissa + "e" + (exponent < 0 ? "-" : "+") + exp;
  }

  private static String fixed(String digits, int point) {
    if (point <= 0) {
      return "0." + "0".repeat(-point) + digits;
    }
    if (point >= digits.length()) {
      return digits + "0".repeat(point - digits.length()) + ".0";
    }
    return digits.substring(0, point) + "." + digits.substring(point);
  }

  private static void repr(Object value, StringBuilder out) {
    if (value == null) {
      out.append("None");
    } else if (value instanceof Boolean b) {
      out.append(b ? "True" : "False");
    } else if (value instanceof Double d) {
      out.append(floatRepr(d));
    } else if (value instanceof String s) {
      stringRepr(s, out);
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (Iterator<?> it = list.iterator(); it.hasNext(); ) {
        repr(it.next(), out);
        out.append(it.hasNext() ? ", " : "");
      }
      out.append(']');
    } else if (value instanceof Map<?, ?> map) {
      out.append('{');
      for (Iterator<? extends Map.Entry<?, ?>> it = map.entrySet().iterator(); it.hasNext(); ) {
        Map.Entry<?, ?> entry = it.next();
        repr(entry.getKey(), out);
        out.append(": ");
        repr(entry.getValue(), out);
        out.append(it.hasNext() ? ", " : "");
      }
      out.append('}');
    } else {
      out.append(value);
    }
  }

  private static void stringRepr(String s, StringBuilder out) {
    char quote = s.indexOf('\'') >= 0 && s.indexOf('"') < 0 ? '"' : '\'';
    out.append(quote);
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (c == quote || c == '\\') {
        out.append('\\').append(c);
      } else if (c == '\n') {
        out.append("\\n");
      } else if (c == '\r') {
        out.append("\\r");
      } else if (c == '\t') {
        out.append("\\t");
      } else if (c < 0x20 || c == 0x7f) {
        out.append(String.format("\\x%02x", (int) c));
      } else {
        out.append(c);
      }
    }
    out.append(quote);
  }

  private static void json(Object value, boolean sortKeys, StringBuilder out) {
    if (value == null) {
      out.append("null");
    } else if (value instanceof Boolean b) {
      out.append(b ? "true" : "false");
    } else if (value instanceof Double d) {
      out.append(Double.isNaN(d) ? "NaN" : Double.isInfinite(d)
          ? (d > 0 ? "Infinity" : "-Infinity") : floatRepr(d));
    } else if (value instanceof String s) {
      stringJson(s, out);
    } else if (value instanceof List<?> list) {
      out.append('[');
      for (Iterator<?> it = list.iterator(); it.hasNext(); ) {
        json(it.next(), sortKeys, out);
        out.append(it.hasNext() ? ", " : "");
      }
      out.append(']');
    } else if (value instanceof Map<?, ?> map) {
      Iterable<? extends Map.Entry<?, ?>> entries = map.entrySet();
      if (sortKeys) {
        entries = map.entrySet().stream()
            .sorted((x, y) -> ((String) x.getKey()).compareTo((String) y.getKey())).toList();
      }
      out.append('{');
      boolean first = true;
      for (Map.Entry<?, ?> entry : entries) {
        out.append(first ? "" : ", ");
        first = false;
        stringJson((String) entry.getKey(), out);
        out.append(": ");
        json(entry.getValue(), sortKeys, out);
      }
      out.append('}');
    } else {
      out.append(value);
    }
  }

  /** A JSON string with {@code ensure_ascii}: every character outside space..~ escaped. */
  private static void stringJson(String s, StringBuilder out) {
    out.append('"');
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      switch (c) {
        case '"' -> out.append("\\\"");
        case '\\' -> out.append("\\\\");
        case '\n' -> out.append("\\n");
        case '\r' -> out.append("\\r");
        case '\t' -> out.append("\\t");
        case '\b' -> out.append("\\b");
        case '\f' -> out.append("\\f");
        default -> {
          if (c < 0x20 || c > 0x7e) {
            out.append(String.format("\\u%04x", (int) c));
          } else {
            out.append(c);
          }
        }
      }
    }
    out.append('"');
  }
}
