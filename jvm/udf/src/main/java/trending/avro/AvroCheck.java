package trending.avro;

import java.util.List;
import org.apache.avro.Schema;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF1;
import org.apache.spark.sql.types.DataTypes;

/**
 * Why a value is not exactly one Avro datum of a schema, or null when it is: a strict walk of the
 * binary encoding before Spark's {@code from_avro} decodes it.
 *
 * <p>{@code from_avro} accepts a datum followed by trailing bytes, strings that are not UTF-8, and
 * allocates whatever a length prefix claims (a prefix of 2 GB takes the executor's heap). The
 * walk reads no more than the value holds: every length is checked against the bytes left, every
 * string is checked as UTF-8, and the datum must end where the value ends. The reasons name the
 * field, never the bytes, so they stay few (they label the dead-letter metrics).
 */
public final class AvroCheck implements UDF1<byte[], String> {
  private static final long serialVersionUID = 1L;
  private static final Schema MAP_KEY = Schema.create(Schema.Type.STRING);

  private final String schemaJson;
  private final int headerBytes;
  private transient Schema schema;

  /** Checks values of {@code schemaJson} that start after {@code headerBytes} (5: Confluent). */
  public AvroCheck(String schemaJson, int headerBytes) {
    this.schemaJson = schemaJson;
    this.headerBytes = headerBytes;
  }

  /** Registers a check of {@code schemaJson} as the SQL function {@code name}. */
  public static void register(SparkSession spark, String name, String schemaJson, int headerBytes) {
    spark.udf().register(name, new AvroCheck(schemaJson, headerBytes), DataTypes.StringType);
  }

  @Override
  public String call(byte[] value) {
    if (value == null || value.length < headerBytes) {
      return null; // empty values and short headers have their own reasons
    }
    if (schema == null) {
      schema = new Schema.Parser().parse(schemaJson);
    }
    Walk walk = new Walk(value, headerBytes);
    try {
      walk.datum(schema, schema.getName());
    } catch (Malformed problem) {
      return problem.getMessage();
    }
    return walk.pos == value.length ? null : "trailing bytes after the Avro record";
  }

  /** A reason the walk stopped. */
  static final class Malformed extends Exception {
    private static final long serialVersionUID = 1L;

    Malformed(String reason) {
      super(reason, null, false, false);
    }
  }

  /** A cursor over one value's bytes. */
  static final class Walk {
    private final byte[] bytes;
    int pos;

    Walk(byte[] bytes, int start) {
      this.bytes = bytes;
      this.pos = start;
    }

    void datum(Schema schema, String field) throws Malformed {
      switch (schema.getType()) {
        case NULL -> {}
        case BOOLEAN -> {
          int b = take(1, field);
          if (bytes[b] != 0 && bytes[b] != 1) {
            throw new Malformed("boolean field " + field + " is not 0 or 1");
          }
        }
        case INT -> {
          long v = varint(field);
          if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new Malformed("int field " + field + " is out of range");
          }
        }
        case LONG -> varint(field);
        case FLOAT -> take(4, field);
        case DOUBLE -> take(8, field);
        case BYTES -> take(length(field), field);
        case STRING -> {
          int length = length(field);
          int start = take(length, field);
          if (!Utf8.valid(bytes, start, start + length)) {
            throw new Malformed("string field " + field + " is not valid UTF-8");
          }
        }
        case FIXED -> take(schema.getFixedSize(), field);
        case ENUM -> index(schema.getEnumSymbols().size(), "enum", field);
        case UNION -> {
          List<Schema> branches = schema.getTypes();
          datum(branches.get(index(branches.size(), "union", field)), field);
        }
        case RECORD -> {
          for (Schema.Field f : schema.getFields()) {
            datum(f.schema(), f.name());
          }
        }
        case ARRAY -> blocks(schema.getElementType(), false, field);
        case MAP -> blocks(schema.getValueType(), true, field);
        default -> throw new Malformed("field " + field + " has an unknown type");
      }
    }

    private void blocks(Schema item, boolean map, String field) throws Malformed {
      while (true) {
        long count = varint(field);
        if (count == 0) {
          return;
        }
        if (count < 0) {
          count = -count;
          varint(field); // the block's size in bytes
        }
        if (count > bytes.length - pos) { // every item takes a byte, but for empty types
          throw new Malformed("item count of field " + field + " is beyond the value");
        }
        for (long i = 0; i < count; i++) {
          if (map) {
            datum(MAP_KEY, field);
          }
          datum(item, field);
        }
      }
    }

    private int index(int size, String what, String field) throws Malformed {
      long i = varint(field);
      if (i < 0 || i >= size) {
        throw new Malformed(what + " index of field " + field + " is out of range");
      }
      return (int) i;
    }

    private int length(String field) throws Malformed {
      long length = varint(field);
      if (length < 0) {
        throw new Malformed("length of field " + field + " is negative");
      }
      if (length > bytes.length - pos) {
        throw new Malformed("length of field " + field + " is beyond the value");
      }
      return (int) length;
    }

    /** Skips {@code n} bytes; returns where they start. */
    private int take(int n, String field) throws Malformed {
      if (n > bytes.length - pos) {
        throw new Malformed("value ends inside field " + field);
      }
      int start = pos;
      pos += n;
      return start;
    }

    /** A zig-zag varint of at most 10 bytes. */
    private long varint(String field) throws Malformed {
      long raw = 0;
      for (int shift = 0; shift < 70; shift += 7) {
        if (pos >= bytes.length) {
          throw new Malformed("value ends inside field " + field);
        }
        byte b = bytes[pos++];
        raw |= (long) (b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          return (raw >>> 1) ^ -(raw & 1);
        }
      }
      throw new Malformed("varint of field " + field + " is longer than 10 bytes");
    }
  }
}
