package trending.state;

import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.StatefulProcessorHandle;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.apache.spark.util.LongAccumulator;
import scala.collection.Iterator;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Per hashtag, the counts of its open panes in Spark's state store; per micro-batch, the new
 * count of every open window a changed pane belongs to, if it can enter the window's top-k.
 *
 * <p>Input: the rows of {@link PaneCombiner}, grouped by key: a hashtag key; {@link #SIDE} +
 * record position for a late or undecodable record, passed through unchanged; {@link #NO_TAG} +
 * task for on-time tweets without hashtags, which only count toward the batch figures. For a
 * hashtag with rows {@code (pane, n)} in a batch under watermark {@code W} ({@link BatchParams}):
 *
 * <ul>
 *   <li>each row adds {@code n} to its pane's count (a tweet counts once per distinct hashtag);
 *   <li>for each window {@code [s, s + size)} holding a changed pane with {@code s + size > W},
 *       the window count {@code c = sum of the panes in [s, s + size)} is emitted as
 *       {@code (COUNTED, s, tag, c)} when {@code c >= threshold(s)}: counts only grow, so a tag
 *       below the k-th count of the window's last published top-k stays out of it;
 *   <li>an event-time timer at {@code lastEnd(oldest pane)} (the end of the newest window holding
 *       it) drops the panes no open window holds once Spark's watermark reaches it, and the whole
 *       row when none is left.
 * </ul>
 */
public final class HashtagPaneProcessor extends StatefulProcessor<String, Row, Row> {
  private static final long serialVersionUID = 1L;
  public static final char SIDE = '\u0000';
  public static final char NO_TAG = '\u0001';
  static final int COUNTED = 0;
  static final int KEY = 0;
  static final int KIND = 1;
  static final int PANE = 2;
  static final int COUNT = 3;
  static final int TWEETS = 4;
  static final int MAX_EVENT_MS = 5;
  static final int PARTITION = 6;
  static final int OFFSET = 7;
  static final int RECORD_KEY = 8;
  static final int VALUE = 9;
  static final int REASON = 10;

  private final SlidingGeometry geometry;
  private final String job;
  private final LongAccumulator tweets;
  private final MaxAccumulator maxEventMs;
  private transient ValueState<byte[]> panes;

  public HashtagPaneProcessor(
      SlidingGeometry geometry, String job, LongAccumulator tweets, MaxAccumulator maxEventMs) {
    this.geometry = geometry;
    this.job = job;
    this.tweets = tweets;
    this.maxEventMs = maxEventMs;
  }

  @Override
  public void init(OutputMode outputMode, TimeMode timeMode) {
    StatefulProcessorHandle handle = getHandle();
    panes = handle.getValueState("panes", Encoders.BINARY(), TTLConfig.NONE());
  }

  @Override
  public Iterator<Row> handleInputRows(String key, Iterator<Row> rows, TimerValues timerValues) {
    char first = key.isEmpty() ? 'x' : key.charAt(0);
    if (first == SIDE) {
      List<Row> out = new ArrayList<>();
      while (rows.hasNext()) {
        out.add(sideRow(rows.next()));
      }
      return CollectionConverters.asScala(out.iterator());
    }
    if (first == NO_TAG) {
      countTweets(rows, null);
      return CollectionConverters.asScala(new ArrayList<Row>().iterator());
    }
    return CollectionConverters.asScala(countHashtag(key, rows).iterator());
  }

  @Override
  public Iterator<Row> handleExpiredTimer(
      String key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
    byte[] stored = panes.get(); // null when absent: one state read, not two
    if (stored != null) {
      PaneCounts counts = PaneCounts.decode(stored, geometry.paneMs);
      dropClosed(counts, timerValues.getCurrentWatermarkInMs());
      if (counts.isEmpty()) {
        panes.clear();
      } else {
        panes.update(counts.encode(geometry.paneMs));
        getHandle().registerTimer(geometry.lastEnd(counts.oldest()));
      }
    }
    return CollectionConverters.asScala(new ArrayList<Row>().iterator());
  }

  private List<Row> countHashtag(String tag, Iterator<Row> rows) {
    byte[] stored = panes.get(); // null when absent: one state read, not two
    PaneCounts counts =
        stored != null
            ? PaneCounts.decode(stored, geometry.paneMs)
            : new PaneCounts((int) Math.min(64, geometry.sizeMs / geometry.paneMs + 2));
    Long timerBefore = counts.isEmpty() ? null : geometry.lastEnd(counts.oldest());
    TreeSet<Long> changed = new TreeSet<>();
    countTweets(rows, (pane, n) -> {
      counts.add(pane, n);
      changed.add(pane);
    });
    long timerAfter = geometry.lastEnd(counts.oldest());
    if (timerBefore == null || timerAfter != timerBefore) {
      if (timerBefore != null) {
        getHandle().deleteTimer(timerBefore);
      }
      getHandle().registerTimer(timerAfter);
    }
    panes.update(counts.encode(geometry.paneMs));
    return windowCounts(tag, counts, changed, BatchParams.current(job));
  }

  /** Adds each row to the batch figures and hands its pane to {@code onPane}. */
  private void countTweets(Iterator<Row> rows, PaneAdder onPane) {
    long counted = 0;
    long max = Long.MIN_VALUE;
    while (rows.hasNext()) {
      Row row = rows.next();
      counted += row.getLong(TWEETS);
      max = Math.max(max, row.getLong(MAX_EVENT_MS));
      if (onPane != null) {
        onPane.add(row.getLong(PANE), row.getLong(COUNT));
      }
    }
    tweets.add(counted);
    maxEventMs.addLong(max);
  }

  /** Receives {@code n} more tweets of a pane. */
  @FunctionalInterface
  private interface PaneAdder {
    void add(long pane, long n);
  }

  private List<Row> windowCounts(
      String tag, PaneCounts counts, TreeSet<Long> changedPanes, BatchParams params) {
    TreeSet<Long> windows = new TreeSet<>();
    for (long pane : changedPanes) {
      long last = geometry.lastWindowStart(pane);
      for (long s = geometry.firstWindowStart(pane); s <= last; s += geometry.hopMs) {
        if (params.isOpen(s + geometry.sizeMs)) {
          windows.add(s);
        }
      }
    }
    List<Row> out = new ArrayList<>(windows.size());
    for (long start : windows) {
      long count = counts.sum(start, start + geometry.sizeMs);
      if (count >= params.threshold(start)) {
        out.add(RowFactory.create(COUNTED, start, tag, count, null, null, null, null, null));
      }
    }
    return out;
  }

  /** Drops the panes whose newest window ended at or before {@code watermarkMs}. */
  private void dropClosed(PaneCounts counts, long watermarkMs) {
    int closed = 0;
    while (closed < counts.size && geometry.lastEnd(counts.starts[closed]) <= watermarkMs) {
      closed++;
    }
    if (closed > 0) {
      counts.dropBefore(closed < counts.size ? counts.starts[closed] : Long.MAX_VALUE);
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
        row.isNullAt(REASON) ? null : row.getString(REASON));
  }
}
