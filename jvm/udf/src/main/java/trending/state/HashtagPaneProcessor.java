package trending.state;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.util.AccumulatorV2;
import org.apache.spark.util.LongAccumulator;
import org.apache.spark.TaskContext;
import org.apache.spark.util.TaskCompletionListener;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Per hashtag, the counts of its open panes in Spark's state store; per micro-batch, the new
 * count of every open window a changed pane belongs to, if it can enter the window's top-k.
 *
 * <p>Input: the rows of {@link PaneCombiner}, grouped by key. A key {@code >= 0} is a bucket,
 * {@code floorMod(tag.hashCode(), BUCKETS)}, its rows the packed {@code (tag, pane, n)} counts of
 * each task ({@link PaneCombiner#readPacked}); its state row holds the pane counts of all its
 * tags ({@link BucketState}), so the store sees one read and one write per bucket and batch, not
 * per hashtag, and one timer per bucket. Negative keys carry late and undecodable records, passed
 * through unchanged, and on-time tweets without hashtags, which only count toward the batch
 * figures. For a hashtag with rows {@code (pane, n)} in a batch under watermark {@code W}
 * ({@link BatchParams}):
 *
 * <ul>
 *   <li>each row adds {@code n} to its pane's count (a tweet counts once per distinct hashtag);
 *   <li>for each window {@code [s, s + size)} holding a changed pane with {@code s + size > W},
 *       the window count {@code c = sum of the panes in [s, s + size)} is emitted as
 *       {@code (COUNTED, s, tag, c)} when {@code c >= threshold(s)}: counts only grow, so a tag
 *       below the k-th count of the window's last published top-k stays out of it;
 *   <li>panes no open window holds ({@code lastEnd(pane) <= W}) are dropped whenever the bucket
 *       is read, and an event-time timer at the newest pane's {@code lastEnd} empties an idle
 *       bucket (re-armed at the then newest when it fires on a bucket still in use).
 * </ul>
 */
public final class HashtagPaneProcessor extends StatefulProcessor<Integer, Row, Row> {
  private static final long serialVersionUID = 1L;
  /** Few enough that a batch's per-key cost stays low on a long tail (bench-scale: 4096 beat
   * 16384, 65536 and 2^20 on 3M tags); changing it changes the checkpoint's state layout. */
  public static final int BUCKETS = 1 << 12;
  static final int COUNTED = 0;
  static final int KIND = 1;
  static final int TWEETS = 5;
  static final int MAX_EVENT_MS = 6;
  static final int PARTITION = 7;
  static final int OFFSET = 8;
  static final int RECORD_KEY = 9;
  static final int VALUE = 10;
  static final int REASON = 11;
  static final int RECORD_TS = 12;
  static final int HEADERS = 13;

  private final SlidingGeometry geometry;
  private final String job;
  private final LongAccumulator tweets;
  private final AccumulatorV2<Long, ?> maxEventMs;
  private final LongAccumulator sideRows;
  private transient ValueState<byte[]> buckets;
  private transient long taskMaxEventMs; // the task's newest event time, added once at its end
  private transient boolean maxPending;
  private transient boolean timers; // false in a batch query (the warm-up): no event time there

  public HashtagPaneProcessor(
      SlidingGeometry geometry,
      String job,
      LongAccumulator tweets,
      AccumulatorV2<Long, ?> maxEventMs,
      LongAccumulator sideRows) {
    this.geometry = geometry;
    this.job = job;
    this.tweets = tweets;
    this.maxEventMs = maxEventMs;
    this.sideRows = sideRows;
  }

  /** The bucket of a hashtag key. */
  public static int bucketOf(String tag) {
    return Math.floorMod(tag.hashCode(), BUCKETS);
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    buckets = getHandle().getValueState("tags", Encoders.BINARY(), TTLConfig.NONE());
    timers = !timeMode.equals(TimeMode.None());
  }

  @Override
  public Iterator<Row> handleInputRows(Integer key, Iterator<Row> rows, TimerValues timerValues) {
    List<Row> out = new ArrayList<>();
    if (key < 0) {
      passThrough(rows, out);
    } else {
      countBucket(rows, BatchParams.current(job), out);
    }
    return CollectionConverters.asScala(out.iterator());
  }

  @Override
  public Iterator<Row> handleExpiredTimer(
      Integer key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    byte[] stored = buckets.get(); // null when absent
    if (stored != null) {
      BucketState state = BucketState.decode(stored, geometry.paneMs);
      state.dropClosed(geometry, timerValues.getCurrentWatermarkInMs());
      state.timerMs = BucketState.NO_TIMER; // this one has fired
      save(state);
    }
    return CollectionConverters.asScala(new ArrayList<Row>().iterator());
  }

  /** Side rows go out as they are; rows of tweets without hashtags only count. */
  private void passThrough(Iterator<Row> rows, List<Row> out) {
    long counted = 0;
    long side = 0;
    long max = Long.MIN_VALUE;
    while (rows.hasNext()) {
      Row row = rows.next();
      if (row.getInt(KIND) != COUNTED) {
        out.add(sideRow(row));
        side++;
      } else {
        counted += row.getLong(TWEETS);
        max = Math.max(max, row.getLong(MAX_EVENT_MS));
      }
    }
    tweets.add(counted);
    sideRows.add(side);
    addEventMs(max);
  }

  private void countBucket(Iterator<Row> rows, BatchParams params, List<Row> out) {
    byte[] stored = buckets.get(); // null when absent: one state read
    BucketState state =
        stored != null ? BucketState.decode(stored, geometry.paneMs) : new BucketState(4);
    if (params.watermarkMs() != null) {
      state.dropClosed(geometry, params.watermarkMs());
    }
    Map<String, TreeSet<Long>> changed = new HashMap<>();
    long counted = 0;
    long max = Long.MIN_VALUE;
    PaneCombiner.PackedCount add =
        (tag, pane, n) -> {
          state.tags.computeIfAbsent(tag, t -> new PaneCounts(4)).add(pane, n);
          changed.computeIfAbsent(tag, t -> new TreeSet<>()).add(pane);
        };
    while (rows.hasNext()) {
      Row row = rows.next();
      PaneCombiner.readPacked((byte[]) row.get(VALUE), add);
      counted += row.getLong(TWEETS);
      max = Math.max(max, row.getLong(MAX_EVENT_MS));
    }
    tweets.add(counted);
    addEventMs(max);
    for (Map.Entry<String, TreeSet<Long>> tag : changed.entrySet()) {
      windowCounts(tag.getKey(), state.tags.get(tag.getKey()), tag.getValue(), params, out);
    }
    save(state);
  }

  /**
   * Keeps the task's newest event time and adds it to {@link #maxEventMs} once, when the task
   * completes (before Spark collects the task's accumulators): one value per task whatever the
   * accumulator, so a {@code CollectionAccumulator} of Spark's own serves as well as a
   * {@link MaxAccumulator}.
   */
  private void addEventMs(long eventMs) {
    if (eventMs == Long.MIN_VALUE) {
      return;
    }
    if (!maxPending) {
      maxPending = true;
      taskMaxEventMs = eventMs;
      TaskContext task = TaskContext.get();
      if (task == null) {
        maxEventMs.add(eventMs);
        maxPending = false;
        return;
      }
      task.addTaskCompletionListener(
          (TaskCompletionListener)
              context -> {
                maxEventMs.add(taskMaxEventMs);
                maxPending = false;
              });
    } else if (eventMs > taskMaxEventMs) {
      taskMaxEventMs = eventMs;
    }
  }

  /** Writes (or deletes) the bucket's row; arms a timer when none is pending. */
  private void save(BucketState state) {
    if (state.isEmpty()) {
      if (timers && state.timerMs != BucketState.NO_TIMER) {
        getHandle().deleteTimer(state.timerMs);
      }
      buckets.clear();
      return;
    }
    if (timers && state.timerMs == BucketState.NO_TIMER) {
      state.timerMs = state.newestEnd(geometry);
      getHandle().registerTimer(state.timerMs);
    }
    buckets.update(state.encode(geometry.paneMs));
  }

  private void windowCounts(
      String tag, PaneCounts counts, TreeSet<Long> changedPanes, BatchParams params, List<Row> out) {
    TreeSet<Long> windows = new TreeSet<>();
    for (long pane : changedPanes) {
      long last = geometry.lastWindowStart(pane);
      for (long s = geometry.firstWindowStart(pane); s <= last; s += geometry.hopMs) {
        if (params.isOpen(s + geometry.sizeMs)) {
          windows.add(s);
        }
      }
    }
    for (long start : windows) {
      long count = counts.sum(start, start + geometry.sizeMs);
      if (count >= params.threshold(start)) {
        out.add(
            RowFactory.create(COUNTED, start, tag, count, null, null, null, null, null, null, null));
      }
    }
  }

  private static Row sideRow(Row row) {
    return RowFactory.create(
        row.getInt(KIND),
        null,
        null,
        null,
        row.getInt(PARTITION),
        row.getLong(OFFSET),
        row.isNullAt(RECORD_KEY) ? null : row.get(RECORD_KEY),
        row.isNullAt(VALUE) ? null : row.get(VALUE),
        row.isNullAt(REASON) ? null : row.getString(REASON),
        row.isNullAt(RECORD_TS) ? null : row.getLong(RECORD_TS),
        row.isNullAt(HEADERS) ? null : row.get(HEADERS));
  }
}
