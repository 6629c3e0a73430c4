package trending.temporal.spark;

import org.apache.spark.sql.types.StructType;

/**
 * What {@link KafkaOutput} and {@link WindowOutput} share: where a result's columns ({@code key,
 * start_ms, end_ms, value, values}) are in the output schema, and the input columns that order
 * a key's rows.
 */
abstract class ResultColumns implements OutputRows {
  private static final long serialVersionUID = 1L;

  /** The number of output columns. */
  final int width;
  final int key;
  private final int start;
  private final int end;
  private final int value;
  private final int values;
  private final int[] order;

  ResultColumns(StructType output, int[] order) {
    width = output.size();
    key = output.fieldIndex("key");
    start = output.fieldIndex("start_ms");
    end = output.fieldIndex("end_ms");
    value = output.fieldIndex("value");
    values = output.fieldIndex("values");
    this.order = order;
  }

  @Override
  public final int[] order() {
    return order;
  }

  /** The columns of an output row with one final row of {@code keyValue}; the rest null. */
  final Object[] resultColumns(Object keyValue, trending.temporal.Row row) {
    Object[] out = new Object[width];
    out[key] = keyValue;
    out[start] = row.start();
    out[end] = OutputRows.end(row.end());
    out[value] = OutputRows.value(row.value());
    out[values] = OutputRows.values(row.value());
    return out;
  }
}
