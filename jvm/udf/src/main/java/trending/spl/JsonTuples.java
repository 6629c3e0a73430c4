package trending.spl;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Tuples as JSON objects, as the replay format writes them: their {@link Attributes} (a JSON
 * integer is an integer, a number with a fraction or exponent a float, a boolean not a number),
 * their {@link Codec}, and partition keys that compare as Python's do ({@link Key}).
 */
final class JsonTuples implements Attributes<ObjectNode> {
  static final ObjectMapper MAPPER = new ObjectMapper();

  private final List<String> names = new ArrayList<>();

  @Override
  public int index(String name) {
    int at = names.indexOf(name);
    if (at < 0) {
      names.add(name);
      at = names.size() - 1;
    }
    return at;
  }

  @Override
  public int kind(ObjectNode record, int index) {
    JsonNode value = record.get(names.get(index));
    if (value == null) {
      return ABSENT;
    }
    if (value.isIntegralNumber()) {
      if (!value.canConvertToLong()) {
        throw new InputError("integer beyond 64 bits in attribute '" + names.get(index) + "'");
      }
      return INTEGER;
    }
    return value.isFloatingPointNumber() ? REAL : OTHER;
  }

  @Override
  public long integer(ObjectNode record, int index) {
    return record.get(names.get(index)).asLong();
  }

  @Override
  public double real(ObjectNode record, int index) {
    return record.get(names.get(index)).asDouble();
  }

  /** Tuples as their JSON text. */
  static final Codec<ObjectNode> RECORDS =
      new Codec<>() {
        @Override
        public void write(ObjectNode value, StateOutput out) {
          out.writeBytes(json(value));
        }

        @Override
        public ObjectNode read(StateInput in) {
          return (ObjectNode) parse(in.readBytes());
        }
      };

  /** Keys as their JSON text ({@code null} as an empty text). */
  static final Codec<Key> KEYS =
      new Codec<>() {
        @Override
        public void write(Key value, StateOutput out) {
          out.writeBytes(value == null ? new byte[0] : json(value.node));
        }

        @Override
        public Key read(StateInput in) {
          byte[] bytes = in.readBytes();
          return bytes.length == 0 ? null : Key.of(parse(bytes));
        }
      };

  private static byte[] json(JsonNode node) {
    try {
      return MAPPER.writeValueAsBytes(node);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static JsonNode parse(byte[] bytes) {
    try {
      return MAPPER.readTree(bytes);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /**
   * A partition key from a JSON value, equal to another as Python's dict keys are: a boolean is
   * the integer 0 or 1, a float with no fraction equals the integer of that value, 0.0 equals
   * -0.0; a string equals only the same string. It keeps its JSON value to write.
   */
  static final class Key {
    final JsonNode node;
    private final String text;
    private final boolean integral;
    private final long integer;
    private final double real;

    private Key(JsonNode node, String text, boolean integral, long integer, double real) {
      this.node = node;
      this.text = text;
      this.integral = integral;
      this.integer = integer;
      this.real = real;
    }

    /** The key of a scalar JSON value; {@code null} for JSON null. */
    static Key of(JsonNode node) {
      if (node == null || node.isNull()) {
        return null;
      }
      if (node.isTextual()) {
        return new Key(node, node.asText(), false, 0, 0);
      }
      if (node.isBoolean()) {
        return new Key(node, null, true, node.asBoolean() ? 1 : 0, 0);
      }
      if (node.isIntegralNumber() && node.canConvertToLong()) {
        return new Key(node, null, true, node.asLong(), 0);
      }
      if (node.isNumber()) {
        double d = node.asDouble();
        boolean whole = d == Math.rint(d) && Math.abs(d) < 0x1p63;
        return new Key(node, null, whole, whole ? (long) d : 0, d);
      }
      throw new InputError("a partition key must be a scalar, got " + node);
    }

    @Override
    public boolean equals(Object other) {
      if (!(other instanceof Key that)) {
        return false;
      }
      if (text != null || that.text != null) {
        return text != null && text.equals(that.text);
      }
      if (integral != that.integral) {
        return false;
      }
      return integral ? integer == that.integer : real == that.real;
    }

    @Override
    public int hashCode() {
      if (text != null) {
        return text.hashCode();
      }
      return integral ? Long.hashCode(integer) : Double.hashCode(real);
    }
  }
}
