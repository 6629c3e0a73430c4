package trending.temporal.spark;

import java.nio.ByteBuffer;
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
import trending.spl.Fingerprint;
import trending.temporal.CtiViolation;
import trending.temporal.Item;
import trending.temporal.PythonText;
import trending.temporal.SpecJson;
import trending.temporal.TemporalInputError;
import trending.temporal.TemporalLogic;
import trending.temporal.TemporalQuery;
import trending.temporal.TemporalState;
import trending.temporal.Timeline;
import trending.temporal.Violation;

/**
 * One key's temporal query in Spark's state store, micro-batch by micro-batch.
 *
 * <p>The batch's CTI is Spark's watermark {@code W} (none before it first moves: it starts at
 * 0). A key with input rows advances to {@code W}, then takes its rows in order of sync time
 * (then {@link OutputRows#order}): a CTI row changes nothing, a DEAD row goes out as it is, an
 * event whose sync time is behind {@code W} is LATE (unless the query's violation policy is
 * {@code adjust}), an event the core refuses ({@link TemporalInputError}, {@link
 * CtiViolation}) is DEAD with the core's message; then the key advances to {@code W} again (to
 * the end of time when the input is a batch DataFrame). A key holding events keeps one state
 * value, {@code temporal_jvm}: {@code mark:long spec:long timer:long state:bytes}, the mark
 * {@link #MARK}, a {@link Fingerprint} of the query's JSON, its timer and its query state
 * ({@link TemporalQuery#encode}); an idle key keeps none. A key's state fits only the query it
 * was written by, so a restart with another query fails saying so instead of misreading it (a
 * value without the mark, {@code timer:long state:bytes}, written before the fingerprint, is
 * read without the check). Its event-time timer at {@code max(W, 0) + 1} advances it to the CTI
 * of the first batch whose watermark passes it, input or not.
 */
final class TemporalKeyProcessor extends StatefulProcessor<Row, Row, Row> {
  private static final long serialVersionUID = 1L;
  /** The state variable's name: the Python step's is {@code temporal_keys}. */
  static final String STATE = "temporal_jvm";
  private static final long NO_TIMER = Long.MIN_VALUE;
  /** The first long of a state value with the query's fingerprint: never a timer (those are at
   * least 1, or {@link #NO_TIMER}), which the first long of an older value is. */
  private static final long MARK = Long.MIN_VALUE + 1;

  private final String spec;
  private final EventColumns columns;
  private final OutputRows rows;
  private final boolean close;
  private transient TemporalQuery query;
  private transient ValueState<byte[]> stored;
  private transient Comparator<Row> order;
  private transient boolean timers;
  private transient long specPrint;

  TemporalKeyProcessor(String spec, EventColumns columns, OutputRows rows, boolean close) {
    this.spec = spec;
    this.columns = columns;
    this.rows = rows;
    this.close = close;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    query = SpecJson.read(spec);
    stored = getHandle().getValueState(STATE, Encoders.BINARY(), TTLConfig.NONE());
    order = columns.order(rows.order());
    timers = !timeMode.equals(TimeMode.None());
    specPrint = Fingerprint.of(spec);
  }

  @Override
  public Iterator<Row> handleInputRows(Row key, Iterator<Row> input, TimerValues timerValues) {
    Long cti = timers ? cti(timerValues) : null;
    List<Row> records = new ArrayList<>();
    while (input.hasNext()) {
      records.add(input.next());
    }
    records.sort(order);
    List<Row> out = new ArrayList<>();
    rows.progress(records, out);
    Object value = key.get(0);
    byte[] bytes = stored.get();
    Value kept = bytes == null ? null : value(bytes);
    long timer = kept == null ? NO_TIMER : kept.timer();
    TemporalLogic logic = query.build(kept == null ? query.initialState() : kept.state());
    if (cti != null) {
      results(value, logic, cti, out);
    }
    for (Row record : records) {
      insert(logic, record, cti, out);
    }
    Long end = close ? Long.valueOf(Timeline.END_OF_TIME) : cti;
    if (end != null) {
      results(value, logic, end, out);
    }
    save(logic.state(), timer, cti, NO_TIMER);
    return CollectionConverters.asScala(out.iterator());
  }

  @Override
  public Iterator<Row> handleExpiredTimer(
      Row key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    List<Row> out = new ArrayList<>();
    byte[] bytes = stored.get();
    if (bytes != null) {
      Value value = value(bytes);
      long timer = value.timer();
      Long cti = cti(timerValues);
      TemporalLogic logic = query.build(value.state());
      if (cti != null) {
        results(key.get(0), logic, cti, out);
      }
      save(logic.state(), timer, cti, expiredTimerInfo.getExpiryTimeInMs());
    }
    return CollectionConverters.asScala(out.iterator());
  }

  /** The batch's CTI: Spark's watermark, null before it first moves (it starts at 0). */
  private static Long cti(TimerValues timerValues) {
    long watermark = timerValues.getCurrentWatermarkInMs();
    return watermark > 0 ? watermark : null;
  }

  /** A stored value's timer and query state, once it is known to be this query's. */
  private Value value(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    long first = in.getLong();
    if (first == MARK && in.getLong() != specPrint) {
      throw new IllegalStateException("temporal_window state was written by another query than "
          + "this one (" + spec + "): a key's state fits only the query it was written by; run "
          + "the query as it was, or start a new checkpoint");
    }
    long timer = first == MARK ? in.getLong() : first;
    byte[] state = java.util.Arrays.copyOfRange(bytes, in.position(), bytes.length);
    return new Value(timer, query.restore(state));
  }

  private void results(Object key, TemporalLogic logic, long cti, List<Row> out) {
    for (trending.temporal.Row row : logic.advance(cti)) {
      out.add(rows.result(key, row));
    }
  }

  /** Takes one input row; its side rows (none when it goes in) into {@code out}. */
  private void insert(TemporalLogic logic, Row record, Long cti, List<Row> out) {
    int kind = columns.kind(record);
    if (kind == EventColumns.CTI) {
      return;
    }
    if (kind == EventColumns.DEAD) {
      Object reason = record.get(columns.reason);
      rows.rejected(kind, record, reason == null ? "None" : reason.toString(), out);
      return;
    }
    Long sync = EventColumns.time(record, columns.sync);
    boolean adjust = query.violation() == Violation.ADJUST;
    if (cti != null && sync != null && sync < cti && !adjust) {
      String reason = "late: sync time " + sync + " is behind the watermark " + cti;
      rows.rejected(OutputRows.LATE, record, reason, out);
      return;
    }
    try {
      logic.insert(item(kind, record));
    } catch (TemporalInputError error) {
      rows.rejected(EventColumns.DEAD, record, error.getMessage(), out);
    }
  }

  /** The core's event for an input row; {@link TemporalInputError} when it lacks a field. */
  private Item item(int kind, Row record) {
    Long start = EventColumns.time(record, columns.start);
    Long end = EventColumns.time(record, columns.end);
    String id = columns.id(record);
    Double value = columns.value(record);
    if (value != null && Double.isInfinite(value)) {
      throw new TemporalInputError(
          "value " + PythonText.floatRepr(value) + " is not a finite number");
    }
    if (kind == EventColumns.END_EDGE) {
      if (id == null || end == null) {
        throw new TemporalInputError("an END_EDGE needs its id and end");
      }
      return new Item.EndEdge(id, end);
    }
    if (start == null) {
      throw new TemporalInputError("an " + EventColumns.KIND_NAMES[kind] + " needs its start");
    }
    if (kind == EventColumns.START_EDGE) {
      return new Item.StartEdge(start, value, id);
    }
    if (end == null) {
      throw new TemporalInputError("an INTERVAL needs its end (or send a START_EDGE)");
    }
    return new Item.Interval(start, end, value, id);
  }

  /**
   * Stores the key's state with its timer at {@code max(cti, 0) + 1}, or deletes both when it
   * holds no event; {@code fired}: the timer Spark has just removed.
   */
  private void save(TemporalState state, long timer, Long cti, long fired) {
    boolean kept = !state.isIdle();
    long wanted = kept && timers ? Math.max(cti == null ? 0 : cti, 0) + 1 : NO_TIMER;
    if (timer != NO_TIMER && timer != fired && timer != wanted) {
      getHandle().deleteTimer(timer);
    }
    if (wanted != NO_TIMER && (wanted != timer || timer == fired)) {
      getHandle().registerTimer(wanted);
    }
    if (!kept) {
      stored.clear();
      return;
    }
    byte[] encoded = query.encode(state);
    ByteBuffer bytes = ByteBuffer.allocate(3 * Long.BYTES + encoded.length);
    stored.update(bytes.putLong(MARK).putLong(specPrint).putLong(wanted).put(encoded).array());
  }

  /** A key's stored timer ({@link #NO_TIMER}: none) and query state. */
  private record Value(long timer, TemporalState state) {}
}
