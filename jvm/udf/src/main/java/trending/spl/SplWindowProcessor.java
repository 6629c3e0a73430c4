package trending.spl;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * One SPL window per grouping key in Spark's state store, driven by the key's rows and its
 * timer, with the rules of Python's {@code trending.windows.spl.keyed}:
 *
 * <ul>
 *   <li>a key's rows of a micro-batch go in sorted by event time (event mode), then by the
 *       {@code order_by} columns (nulls last, strings by code point; a stable sort);
 *   <li>the clock: in event mode each row's event time moves it before the row goes in (a row
 *       older than the clock goes in at the clock); in processing mode the batch's processing
 *       time moves it once, before the first row; a fired timer moves it to {@code max(timer,
 *       now, clock)}, {@code now} the watermark (event) or the processing time;
 *   <li>the key's timer is always the window's next due instant ({@link WindowLogic#nextDue}),
 *       and an empty window has none ({@code empty_window_events} is off).
 * </ul>
 *
 * <p>Per key (grouping by the key column) each window has one partition; a whole window
 * (partition eviction) is one grouping key whose partitions are the rows' key column values,
 * and its events' key is their partition. Each event is an output row ({@link EventRows}),
 * numbered per grouping key from 0 across batches and restarts.
 *
 * <p>State, per grouping key: one value {@value #STATE}, the bytes {@code format:byte=2
 * columns:long spec:long seq:varint timer:zigzag window:bytes} (timer {@code -1}: none; the
 * window as {@link StateCodec} writes it, tuples by {@link SparkRecords}). {@code columns} and
 * {@code spec} are fingerprints of the record columns' names and types ({@link
 * SparkRecords#fingerprint}) and of the spec's JSON ({@link Fingerprint}): a window's bytes mean something only for
 * the columns and the spec they were written with, so a query restarted with other input
 * columns or another spec fails saying which, instead of misreading its windows (format 1,
 * written before the fingerprints, is read without the checks). A row the window refuses (an
 * {@link InputError}, e.g. a null delta attribute) fails the query, naming the key and the
 * reason.
 */
public final class SplWindowProcessor extends StatefulProcessor<Row, Row, Row> {
  private static final long serialVersionUID = 1L;
  /** The state variable's name; it differs from the Python runner's ({@code spl_keys}, ...). */
  static final String STATE = "spl_window_jvm";
  private static final int FORMAT = 2;
  /** The format before the fingerprints: {@code format seq timer window}. */
  private static final int FORMAT_WITHOUT_COLUMNS = 1;

  private final String spec;
  private final SparkRecords records;
  private final int[] positions;
  private final int timePosition;
  private final int[] sortColumns;
  private final String timeMode;
  private final boolean whole;
  private final int keyColumn;
  private final EventRows.Shape shape;
  private transient WindowConfig config;
  private transient ValueState<byte[]> state;
  private transient Codec<Object> keys;
  private transient boolean timers;
  private transient long columns;
  private transient long specPrint;

  /**
   * {@code positions}: where each record column is in an input row; {@code timePosition}: the
   * event time (epoch ms) in an input row, or -1; {@code sortColumns}: the record columns to
   * sort by after it; {@code keyColumn}: the record column of the key.
   */
  SplWindowProcessor(String spec, SparkRecords records, int[] positions, int timePosition,
      int[] sortColumns, String timeMode, boolean whole, int keyColumn, EventRows.Shape shape) {
    this.spec = spec;
    this.records = records;
    this.positions = positions.clone();
    this.timePosition = timePosition;
    this.sortColumns = sortColumns.clone();
    this.timeMode = timeMode;
    this.whole = whole;
    this.keyColumn = keyColumn;
    this.shape = shape;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode mode) {
    WindowConfig read = SpecJson.read(spec);
    config = new WindowConfig(read.kind(), read.evict(), read.trigger(), read.partitionBy(),
        read.partitionEviction(), read.summarizers(), read.keepTuples(), false);
    state = getHandle().getValueState(STATE, Encoders.BINARY(), TTLConfig.NONE());
    keys = SparkRecords.keys(records.types[keyColumn]);
    timers = !mode.equals(TimeMode.None());
    columns = records.fingerprint();
    specPrint = Fingerprint.of(spec);
  }

  @Override
  public Iterator<Row> handleInputRows(Row key, Iterator<Row> rows, TimerValues timerValues) {
    List<Input> inputs = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      Long time = timePosition < 0 || row.isNullAt(timePosition) ? null
          : row.getLong(timePosition);
      inputs.add(new Input(time, records.record(row, positions)));
    }
    if (timePosition >= 0 || sortColumns.length > 0) {
      inputs.sort(order());
    }
    Stored stored = load();
    EventRows out = new EventRows(shape, records, stored.seq, whole ? null : plainKey(key));
    try {
      if (timeMode.equals("processing")) {
        long now = timerValues.getCurrentProcessingTimeInMs();
        stored.window.advanceTo(Math.max(now, stored.window.nowMs()), out);
      }
      for (Input input : inputs) {
        if (input.timeMs != null && input.timeMs > stored.window.nowMs()) {
          stored.window.advanceTo(input.timeMs, out);
        }
        Object partition = whole ? SparkRecords.key(input.record.values[keyColumn]) : null;
        stored.window.insert(input.record, partition, out);
      }
    } catch (InputError e) {
      throw refused(key, e);
    }
    save(stored, out, stored.timerMs);
    return CollectionConverters.asScala(out.rows.iterator());
  }

  @Override
  public Iterator<Row> handleExpiredTimer(
      Row key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    long fired = expiredTimerInfo.getExpiryTimeInMs();
    long now = timeMode.equals("event") ? timerValues.getCurrentWatermarkInMs()
        : timerValues.getCurrentProcessingTimeInMs();
    Stored stored = load();
    EventRows out = new EventRows(shape, records, stored.seq, whole ? null : plainKey(key));
    try {
      stored.window.advanceTo(Math.max(Math.max(fired, now), stored.window.nowMs()), out);
    } catch (InputError e) {
      throw refused(key, e);
    }
    save(stored, out, stored.timerMs == fired ? WindowLogic.NOTHING_DUE : stored.timerMs);
    return CollectionConverters.asScala(out.rows.iterator());
  }

  /** Rows by event time (nulls last), then by the sort columns (nulls last); stable. */
  private Comparator<Input> order() {
    return (a, b) -> {
      if (timePosition >= 0) {
        int byTime = nullsLast(a.timeMs, b.timeMs, ValueType.LONG);
        if (byTime != 0) {
          return byTime;
        }
      }
      for (int column : sortColumns) {
        Object x = a.record.values[column];
        Object y = b.record.values[column];
        int by = nullsLast(x, y, records.types[column]);
        if (by != 0) {
          return by;
        }
      }
      return 0;
    };
  }

  private static int nullsLast(Object x, Object y, ValueType type) {
    if (x == null || y == null) {
      return x == null ? (y == null ? 0 : 1) : -1;
    }
    return type.compare(x, y);
  }

  /** The plain value of a per-key grouping key (a timestamp key is grouped by its epoch ms). */
  private Object plainKey(Row key) {
    Object value = key.get(0);
    ValueType type = records.types[keyColumn];
    boolean millis = type == ValueType.TIMESTAMP && value instanceof Long;
    return millis ? value : type.plain(value);
  }

  private IllegalArgumentException refused(Row key, InputError e) {
    String where = whole ? "the window" : "key " + plainKey(key);
    return new IllegalArgumentException(
        "spl_window: " + where + " cannot take a row: " + e.getMessage());
  }

  private Stored load() {
    byte[] bytes = state.get();
    if (bytes == null) {
      return new Stored(config.build(records), 0, WindowLogic.NOTHING_DUE);
    }
    StateInput in = new StateInput(bytes);
    int format = in.readByte();
    if (format != FORMAT && format != FORMAT_WITHOUT_COLUMNS) {
      throw new IllegalStateException("spl_window state in format " + format + ", not "
          + FORMAT + ": run the version that wrote this checkpoint, or start a new one");
    }
    if (format == FORMAT && in.readLong() != columns) {
      throw new IllegalStateException("spl_window state was written for other input columns "
          + "than this query's (" + records.describe() + "): the windows' tuples hold the "
          + "columns they were written with; run the query with those columns, or start a new "
          + "checkpoint");
    }
    if (format == FORMAT && in.readLong() != specPrint) {
      throw new IllegalStateException("spl_window state was written for another window spec "
          + "than this query's (" + spec + "): a window's state fits only the spec it was "
          + "written with; run the query with that spec, or start a new checkpoint");
    }
    long seq = in.readVarLong();
    long timer = in.readZigZag();
    WindowLogic<SparkRecord, Object> window =
        config.restore(records, in.readBytes(), records, keys);
    return new Stored(window, seq, timer);
  }

  /** Keep the window and the event count; make the key's timer the window's next due instant
   * ({@code registered}: the timer the key has now, {@code -1} none). */
  private void save(Stored stored, EventRows out, long registered) {
    long due = stored.window.nextDue();
    if (timers && due != registered) {
      if (registered != WindowLogic.NOTHING_DUE) {
        getHandle().deleteTimer(registered);
      }
      if (due != WindowLogic.NOTHING_DUE) {
        getHandle().registerTimer(due);
      }
    }
    StateOutput bytes = new StateOutput();
    bytes.writeByte(FORMAT);
    bytes.writeLong(columns);
    bytes.writeLong(specPrint);
    bytes.writeVarLong(out.seq);
    bytes.writeZigZag(due);
    bytes.writeBytes(stored.window.encode(records, keys));
    state.update(bytes.toByteArray());
  }

  /** A row's event time ({@code null} in other modes) and its record. */
  private record Input(Long timeMs, SparkRecord record) {}

  /** A grouping key's state as loaded: its window, events so far and registered timer. */
  private record Stored(WindowLogic<SparkRecord, Object> window, long seq, long timerMs) {}
}
