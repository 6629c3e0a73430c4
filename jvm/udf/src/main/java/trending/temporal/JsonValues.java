package trending.temporal;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.json.JsonWriteFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON as Python's {@code json} module reads and writes it, in the plain values of the core
 * ({@link PythonText}): integers stay integers ({@link Long}, {@link BigInteger}), floats are
 * {@link Double}s, and {@code NaN}, {@code Infinity} and {@code -Infinity} are read and written
 * bare.
 */
final class JsonValues {
  static final ObjectMapper MAPPER = new ObjectMapper(JsonFactory.builder()
      .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .disable(JsonWriteFeature.WRITE_NAN_AS_STRINGS)
      .build())
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  private JsonValues() {}

  /** The plain value of a parsed node (null for a missing one). */
  static Object value(JsonNode node) {
    if (node == null || node.isNull() || node.isMissingNode()) {
      return null;
    }
    if (node.isBoolean()) {
      return node.booleanValue();
    }
    if (node.isIntegralNumber()) {
      return node.canConvertToLong() ? (Object) node.longValue() : node.bigIntegerValue();
    }
    if (node.isNumber()) {
      return node.doubleValue();
    }
    if (node.isTextual()) {
      return node.textValue();
    }
    if (node.isArray()) {
      List<Object> list = new ArrayList<>(node.size());
      for (JsonNode item : node) {
        list.add(value(item));
      }
      return list;
    }
    Map<String, Object> map = new LinkedHashMap<>();
    for (Map.Entry<String, JsonNode> field : node.properties()) {
      map.put(field.getKey(), value(field.getValue()));
    }
    return map;
  }

  /** Write a plain value. */
  static void write(Object value, JsonGenerator out) throws IOException {
    if (value == null) {
      out.writeNull();
    } else if (value instanceof Long l) {
      out.writeNumber(l);
    } else if (value instanceof Double d) {
      out.writeNumber(d);
    } else if (value instanceof BigInteger b) {
      out.writeNumber(b);
    } else if (value instanceof Boolean b) {
      out.writeBoolean(b);
    } else if (value instanceof String s) {
      out.writeString(s);
    } else if (value instanceof List<?> list) {
      out.writeStartArray();
      for (Object item : list) {
        write(item, out);
      }
      out.writeEndArray();
    } else {
      out.writeStartObject();
      for (Map.Entry<?, ?> entry : ((Map<?, ?>) value).entrySet()) {
        out.writeFieldName((String) entry.getKey());
        write(entry.getValue(), out);
      }
      out.writeEndObject();
    }
  }
}
