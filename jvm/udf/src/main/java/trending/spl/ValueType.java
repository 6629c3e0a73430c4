package trending.spl;

import java.math.BigDecimal;
import java.sql.Date;
import java.sql.Timestamp;
import java.time.Instant;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.NullType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;

/**
 * The column types a window's Spark tuples may hold, and each one's plain value: the value a
 * window's policies, summarizers, sort and state see, as Python's {@code plain_value} gives it.
 *
 * <ul>
 *   <li>integral columns: a {@link Long} (an integer);
 *   <li>float and double: a {@link Double} (a real), NaN as {@code null};
 *   <li>timestamps (with or without time zone): a {@link Long}, epoch milliseconds rounded down
 *       (an integer; without time zone, the wall clock read as UTC);
 *   <li>decimal, string, boolean, date: a {@link BigDecimal}, {@link String}, {@link Boolean},
 *       {@link LocalDate} (not numbers);
 *   <li>the null type: {@code null}.
 * </ul>
 *
 * <p>{@link #external} turns a plain value back into what Spark's row encoder takes for the
 * column (a timestamp to the millisecond). Other types have no plain value: {@link #of}
 * refuses them.
 */
enum ValueType {
  BYTE, SHORT, INT, LONG, FLOAT, DOUBLE, DECIMAL, STRING, BOOLEAN, DATE, TIMESTAMP, TIMESTAMP_NTZ,
  NULL;

  /** The value type of a Spark column type; {@link IllegalArgumentException} for others. */
  static ValueType of(DataType type) {
    if (type instanceof ByteType) {
      return BYTE;
    } else if (type instanceof ShortType) {
      return SHORT;
    } else if (type instanceof IntegerType) {
      return INT;
    } else if (type instanceof LongType) {
      return LONG;
    } else if (type instanceof FloatType) {
      return FLOAT;
    } else if (type instanceof DoubleType) {
      return DOUBLE;
    } else if (type instanceof DecimalType) {
      return DECIMAL;
    } else if (type instanceof StringType) {
      return STRING;
    } else if (type instanceof BooleanType) {
      return BOOLEAN;
    } else if (type instanceof DateType) {
      return DATE;
    } else if (type instanceof TimestampType) {
      return TIMESTAMP;
    } else if (type instanceof TimestampNTZType) {
      return TIMESTAMP_NTZ;
    } else if (type instanceof NullType) {
      return NULL;
    }
    throw new IllegalArgumentException(
        "a " + type.simpleString() + " cannot go into a window's typed tuples");
  }

  /** The kind of number the plain value is ({@link Attributes#INTEGER}, ...). */
  int kind(Object plain) {
    if (plain == null) {
      return Attributes.OTHER;
    }
    return switch (this) {
      case BYTE, SHORT, INT, LONG, TIMESTAMP, TIMESTAMP_NTZ -> Attributes.INTEGER;
      case FLOAT, DOUBLE -> Attributes.REAL;
      default -> Attributes.OTHER;
    };
  }

  /** The plain value of {@code value}, a value of this type as Spark's row decoder gives it. */
  Object plain(Object value) {
    if (value == null) {
      return null;
    }
    return switch (this) {
      case BYTE, SHORT, INT, LONG -> ((Number) value).longValue();
      case FLOAT, DOUBLE -> {
        double d = ((Number) value).doubleValue();
        yield Double.isNaN(d) ? null : (Object) d;
      }
      case DATE -> value instanceof Date date ? date.toLocalDate() : value;
      case TIMESTAMP -> value instanceof Timestamp time ? millis(time) : millis((Instant) value);
      case TIMESTAMP_NTZ -> millis(((LocalDateTime) value).toInstant(ZoneOffset.UTC));
      case NULL -> null;
      default -> value;
    };
  }

  /** The plain value as Spark's lenient row encoder takes a value of this type. */
  Object external(Object plain) {
    if (plain == null) {
      return null;
    }
    return switch (this) {
      case BYTE -> (byte) (long) (Long) plain;
      case SHORT -> (short) (long) (Long) plain;
      case INT -> (int) (long) (Long) plain;
      case FLOAT -> (float) (double) (Double) plain;
      case TIMESTAMP -> Instant.ofEpochMilli((Long) plain);
      case TIMESTAMP_NTZ -> LocalDateTime.ofInstant(Instant.ofEpochMilli((Long) plain),
          ZoneOffset.UTC);
      default -> plain;
    };
  }

  /** Orders two non-null plain values of this type (strings by code point, as Python does). */
  int compare(Object a, Object b) {
    return switch (this) {
      case FLOAT, DOUBLE -> {
        double x = (Double) a;
        double y = (Double) b;
        yield x < y ? -1 : x > y ? 1 : 0; // -0.0 equals 0.0
      }
      case STRING -> codePoints((String) a, (String) b);
      case DECIMAL -> ((BigDecimal) a).compareTo((BigDecimal) b);
      case BOOLEAN -> Boolean.compare((Boolean) a, (Boolean) b);
      case DATE -> ((LocalDate) a).compareTo((LocalDate) b);
      case NULL -> 0;
      default -> Long.compare((Long) a, (Long) b);
    };
  }

  /** Writes a plain value (or {@code null}) of this type. */
  void write(Object plain, StateOutput out) {
    if (plain == null) {
      out.writeByte(0);
      return;
    }
    switch (this) {
      case BOOLEAN -> out.writeByte((Boolean) plain ? 2 : 1);
      case FLOAT, DOUBLE -> {
        out.writeByte(1);
        out.writeDouble((Double) plain);
      }
      case DECIMAL -> {
        out.writeByte(1);
        out.writeString(((BigDecimal) plain).toString());
      }
      case STRING -> {
        out.writeByte(1);
        out.writeString((String) plain);
      }
      case DATE -> {
        out.writeByte(1);
        out.writeZigZag(((LocalDate) plain).toEpochDay());
      }
      case NULL -> out.writeByte(0);
      default -> {
        out.writeByte(1);
        out.writeZigZag((Long) plain);
      }
    }
  }

  /** Reads what {@link #write} wrote. */
  Object read(StateInput in) {
    int tag = in.readByte();
    if (tag == 0) {
      return null;
    }
    return switch (this) {
      case BOOLEAN -> tag == 2;
      case FLOAT, DOUBLE -> in.readDouble();
      case DECIMAL -> new BigDecimal(in.readString());
      case STRING -> in.readString();
      case DATE -> LocalDate.ofEpochDay(in.readZigZag());
      case NULL -> null;
      default -> in.readZigZag();
    };
  }

  private static long millis(Timestamp time) {
    return time.getTime(); // whole seconds plus the nanoseconds' whole milliseconds: rounded down
  }

  private static long millis(Instant time) {
    return Math.addExact(Math.multiplyExact(time.getEpochSecond(), 1000L),
        time.getNano() / 1_000_000);
  }

  /** Strings by code point, as Python and Spark order them (not by UTF-16 unit). */
  static int codePoints(String a, String b) {
    int n = Math.min(a.length(), b.length());
    for (int i = 0; i < n; i++) {
      char x = a.charAt(i);
      char y = b.charAt(i);
      if (x != y) {
        boolean xs = Character.isSurrogate(x);
        boolean ys = Character.isSurrogate(y);
        if (xs != ys) {
          return xs ? 1 : -1; // a surrogate starts a code point above U+FFFF
        }
        return Character.compare(x, y);
      }
    }
    return Integer.compare(a.length(), b.length());
  }
}
