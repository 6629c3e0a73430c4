package trending.spl;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import scala.collection.immutable.ArraySeq;

/**
 * Window events as typed output rows, as Python's {@code TypedEvents} makes them: the key
 * column, {@code event}, {@code seq}, {@code tuples} (an array of typed tuples, or null),
 * {@code time_ms}, {@code summary} (only for a window with summaries) and {@code size}.
 *
 * <p>{@code seq} numbers every event, kept or not; {@code tuples} of {@code trigger} and {@code
 * initial_full} (the window that stays) is null unless the window is included; {@code size} is
 * the number of tuples the event concerns. A summary is a struct of the summaries: {@code count}
 * a long, {@code sum}, {@code min}, {@code max}, {@code mean} doubles, {@code top_k} an array of
 * doubles, largest first; set on the flush events, null on the others.
 */
final class EventRows implements WindowEvents<SparkRecord, Object> {
  final List<Row> rows = new ArrayList<>();
  long seq;
  private final Shape shape;
  private final SparkRecords records;
  private final Object key;

  /** Rows numbered from {@code seq}; {@code key}: the events' key (null: their partition). */
  EventRows(Shape shape, SparkRecords records, long seq, Object key) {
    this.shape = shape;
    this.records = records;
    this.seq = seq;
    this.key = key;
  }

  /** What the rows hold, beside the window's own tuples. */
  record Shape(ValueType keyType, boolean includeWindow, boolean[] kinds, Summarizer.Kind[] summaries)
      implements Serializable {
    private static final long serialVersionUID = 1L;
  }

  @Override
  public void on(EventKind kind, Object partition, Tuples<SparkRecord> tuples, long timeMs,
      Summary summary) {
    long number = seq++;
    if (!shape.kinds()[kind.ordinal()]) {
      return;
    }
    boolean window = kind == EventKind.TRIGGER || kind == EventKind.INITIAL_FULL;
    Object[] values = new Object[shape.summaries() == null ? 6 : 7];
    values[0] = shape.keyType().external(key != null ? key : partition);
    values[1] = kind.json();
    values[2] = number;
    values[3] = window && !shape.includeWindow() ? null : typed(tuples);
    values[4] = timeMs;
    if (shape.summaries() != null) {
      values[5] = summary == null ? null : summary(summary);
    }
    values[values.length - 1] = (long) tuples.size();
    rows.add(RowFactory.create(values));
  }

  private ArraySeq<Object> typed(Tuples<SparkRecord> tuples) {
    Object[] out = new Object[tuples.size()];
    for (int i = 0; i < out.length; i++) {
      out[i] = records.typed(tuples.get(i));
    }
    return ArraySeq.unsafeWrapArray(out);
  }

  private Row summary(Summary summary) {
    Summarizer.Kind[] kinds = shape.summaries();
    Object[] values = new Object[kinds.length];
    for (int i = 0; i < values.length; i++) {
      Object value = summary.value(i);
      if (value == null) {
        values[i] = null;
      } else if (kinds[i] == Summarizer.Kind.COUNT) {
        values[i] = ((Number) value).longValue();
      } else if (kinds[i] == Summarizer.Kind.TOP_K) {
        List<?> top = (List<?>) value;
        Object[] doubles = new Object[top.size()];
        for (int j = 0; j < doubles.length; j++) {
          doubles[j] = ((Number) top.get(j)).doubleValue();
        }
        values[i] = ArraySeq.unsafeWrapArray(doubles);
      } else {
        values[i] = ((Number) value).doubleValue();
      }
    }
    return RowFactory.create(values);
  }
}
