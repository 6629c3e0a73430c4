package trending.spl;

import java.io.Serializable;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A window's tuples made of Spark rows: the record columns' names and {@link ValueType}s, and
 * for {@link SparkRecord}s their {@link Attributes} (what the policies and summarizers read),
 * their {@link Codec} (the state) and their typed rows (the output's {@code tuples}). A
 * partition key is the plain value of one column ({@link #keys}).
 */
final class SparkRecords implements Attributes<SparkRecord>, Codec<SparkRecord>, Serializable {
  private static final long serialVersionUID = 1L;

  final String[] names;
  final ValueType[] types;

  SparkRecords(StructType schema, List<String> columns) {
    names = columns.toArray(new String[0]);
    types = new ValueType[names.length];
    for (int i = 0; i < names.length; i++) {
      StructField field = schema.apply(names[i]);
      try {
        types[i] = ValueType.of(field.dataType());
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("column '" + names[i] + "': " + e.getMessage(), e);
      }
    }
  }

  /** The columns as {@code name TYPE, ...}, in record column order. */
  String describe() {
    StringBuilder out = new StringBuilder();
    for (int i = 0; i < names.length; i++) {
      out.append(i == 0 ? "" : ", ").append(names[i]).append(' ').append(types[i].name());
    }
    return out.toString();
  }

  /**
   * The {@link Fingerprint} of {@link #describe()}: the same for the same names and types in
   * the same order, so a window's state can say which columns its tuples' bytes were written
   * for.
   */
  long fingerprint() {
    return Fingerprint.of(describe());
  }

  /** The record of columns {@code positions} (in record column order) of {@code row}. */
  SparkRecord record(Row row, int[] positions) {
    Object[] values = new Object[types.length];
    for (int i = 0; i < values.length; i++) {
      values[i] = types[i].plain(row.get(positions[i]));
    }
    return new SparkRecord(values);
  }

  /** The record as the output's typed tuple (a struct of the record columns). */
  Row typed(SparkRecord record) {
    if (record.typed == null) {
      Object[] values = new Object[types.length];
      for (int i = 0; i < values.length; i++) {
        values[i] = types[i].external(record.values[i]);
      }
      record.typed = RowFactory.create(values);
    }
    return record.typed;
  }

  @Override
  public int index(String name) {
    return Arrays.asList(names).indexOf(name);
  }

  @Override
  public int kind(SparkRecord record, int index) {
    return index < 0 ? ABSENT : types[index].kind(record.values[index]);
  }

  @Override
  public long integer(SparkRecord record, int index) {
    return (Long) record.values[index];
  }

  @Override
  public double real(SparkRecord record, int index) {
    return (Double) record.values[index];
  }

  @Override
  public void write(SparkRecord record, StateOutput out) {
    for (int i = 0; i < types.length; i++) {
      types[i].write(record.values[i], out);
    }
  }

  @Override
  public SparkRecord read(StateInput in) {
    Object[] values = new Object[types.length];
    for (int i = 0; i < values.length; i++) {
      values[i] = types[i].read(in);
    }
    return new SparkRecord(values);
  }

  /**
   * Partition keys that are the plain values of column {@code type}: equal as Python's dict
   * keys are ({@code -0.0} is {@code 0.0}), written as the column's values.
   */
  static Codec<Object> keys(ValueType type) {
    return new Codec<>() {
      @Override
      public void write(Object key, StateOutput out) {
        type.write(key, out);
      }

      @Override
      public Object read(StateInput in) {
        return type.read(in);
      }
    };
  }

  /** A plain value as a partition key ({@link #keys}). */
  static Object key(Object plain) {
    return plain instanceof Double d && d == 0.0 ? (Object) 0.0 : plain;
  }
}
