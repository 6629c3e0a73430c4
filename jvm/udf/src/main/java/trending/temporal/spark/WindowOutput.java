package trending.temporal.spark;

import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.StructType;
import trending.temporal.PythonText;
import trending.temporal.TemporalInputError;

/**
 * Results only, with the fields of {@code schemas/window_row.avsc} ({@code key, start_ms,
 * end_ms, value, values}). A LATE row is dropped, as Spark drops rows behind its watermark; a
 * DEAD one fails the query ({@code invalid="fail"}) or is dropped. The failure is an {@link
 * IllegalArgumentException} with the message of the Python step's {@link TemporalInputError}: a
 * class of Java's own, which a driver that loaded this jar after it started can still read.
 */
final class WindowOutput extends ResultColumns {
  private static final long serialVersionUID = 1L;

  private final boolean fail;
  private final EventColumns input;

  WindowOutput(StructType output, EventColumns input, boolean fail) {
    super(output, new int[] {input.kind, input.start, input.end, input.id, input.value});
    this.fail = fail;
    this.input = input;
  }

  @Override
  public Row result(Object keyValue, trending.temporal.Row row) {
    return RowFactory.create(resultColumns(keyValue, row));
  }

  @Override
  public void rejected(int kind, Row record, String reason, List<Row> out) {
    if (kind != EventColumns.DEAD || !fail) {
      return;
    }
    Long startMs = EventColumns.time(record, input.start);
    Long endMs = EventColumns.time(record, input.end);
    Double v = record.isNullAt(input.value) ? null : ((Number) record.get(input.value)).doubleValue();
    String shown = "{'id': " + PythonText.repr(input.id(record))
        + ", 'start_ms': " + PythonText.repr(startMs)
        + ", 'end_ms': " + PythonText.repr(endMs)
        + ", 'value': " + PythonText.repr(v) + "}";
    String keyText = keyRepr(record.get(input.key));
    throw new IllegalArgumentException("key " + keyText + ": " + reason + "; the event: " + shown
        + " (invalid='drop' drops such events)");
  }

  /** The key as Python's {@code repr} shows it (a value of another type: its text). */
  private static String keyRepr(Object key) {
    if (key instanceof Integer || key instanceof Short || key instanceof Byte) {
      return PythonText.repr(((Number) key).longValue());
    }
    if (key instanceof Float f) {
      return PythonText.repr(f.doubleValue());
    }
    if (key == null || key instanceof String || key instanceof Number || key instanceof Boolean) {
      return PythonText.repr(key);
    }
    return key.toString();
  }

  @Override
  public void progress(List<Row> records, List<Row> out) {}
}
