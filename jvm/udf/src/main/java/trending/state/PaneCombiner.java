package trending.state;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import trending.udf.Hashtags;

/**
 * The map-side half of the counting, per task: each on-time tweet's distinct hashtag keys
 * ({@link Hashtags#keys}) are counted per {@code (tag, pane)} before anything is shuffled, so the
 * state step receives one row per {@code (tag, pane)} and task instead of one per tweet and tag.
 *
 * <p>Input ({@link #INPUT_COLUMNS}): decoded
 * records with their kind decided. Output ({@link #OUTPUT}): a row per {@code (tag, pane)}, keyed
 * by the tag's bucket ({@link HashtagPaneProcessor#bucketOf}), with {@code n} tweets holding the
 * tag, {@code tweets} of them counted first under it (each tweet once, under its first key, or
 * under a row without tag and a negative key when it has none) and their newest event time; late
 * and dead records pass through under negative keys, with their Kafka timestamp and headers.
 */
public final class PaneCombiner implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  public static final String[] INPUT_COLUMNS = {
    "kind", "event_ms", "text", "partition", "offset", "record_key", "value", "reason",
    "record_ts", "headers"
  };
  /** A Kafka record's headers, as Spark's Kafka source gives them. */
  public static final DataType HEADERS =
      DataTypes.createArrayType(
          new StructType()
              .add("key", DataTypes.StringType, true)
              .add("value", DataTypes.BinaryType, true),
          true);
  public static final StructType OUTPUT =
      new StructType()
          .add("key", DataTypes.IntegerType, false)
          .add("kind", DataTypes.IntegerType, false)
          .add("tag", DataTypes.StringType, true)
          .add("pane_start", DataTypes.LongType, true)
          .add("n", DataTypes.LongType, false)
          .add("tweets", DataTypes.LongType, false)
          .add("max_event_ms", DataTypes.LongType, true)
          .add("partition", DataTypes.IntegerType, true)
          .add("offset", DataTypes.LongType, true)
          .add("record_key", DataTypes.BinaryType, true)
          .add("value", DataTypes.BinaryType, true)
          .add("reason", DataTypes.StringType, true)
          .add("record_ts", DataTypes.LongType, true)
          .add("headers", HEADERS, true);

  /** Rows without a hashtag go under keys -1 .. -SPREAD, spread over tasks. */
  private static final int SPREAD = 1024;

  private final SlidingGeometry geometry;

  public PaneCombiner(SlidingGeometry geometry) {
    this.geometry = geometry;
  }

  /**
   * Per (tag, pane): tweets holding the tag, tweets counted first under it, newest event. It is
   * its own map key: {@code hashCode} mixes the tag's and the pane's hashes with a finalizer,
   * because tags made of similar syllables share the low bits of {@code String.hashCode}, which
   * is all a {@link HashMap} table looks at.
   */
  private static final class Tally {
    final String tag;
    final long pane;
    final int hash;
    long n;
    long tweets;
    long maxEventMs = Long.MIN_VALUE;

    Tally(String tag, long pane) {
      this.tag = tag;
      this.pane = pane;
      long h = (tag == null ? 0 : tag.hashCode()) * 0x9E3779B97F4A7C15L + pane;
      h = (h ^ (h >>> 33)) * 0xFF51AFD7ED558CCDL;
      this.hash = (int) (h ^ (h >>> 33));
    }

    @Override
    public int hashCode() {
      return hash;
    }

    @Override
    public boolean equals(Object other) {
      return other instanceof Tally t && t.pane == pane && Objects.equals(t.tag, tag);
    }
  }

  @Override
  public Iterator<Row> call(Iterator<Row> records) {
    Map<Tally, Tally> tallies = new HashMap<>();
    List<Row> out = new ArrayList<>();
    int noTag = -1 - Math.floorMod(partitionId(), SPREAD);
    while (records.hasNext()) {
      Row record = records.next();
      int kind = record.getInt(0);
      if (kind != HashtagPaneProcessor.COUNTED) {
        out.add(sideRow(record));
        continue;
      }
      long eventMs = record.getLong(1);
      long pane = geometry.paneStart(eventMs);
      String[] keys = Hashtags.keys(record.isNullAt(2) ? null : record.getString(2));
      if (keys.length == 0) {
        tally(tallies, null, pane, eventMs, true);
      }
      for (int i = 0; i < keys.length; i++) {
        tally(tallies, keys[i], pane, eventMs, i == 0);
      }
    }
    for (Tally t : tallies.keySet()) {
      int key = t.tag == null ? noTag : HashtagPaneProcessor.bucketOf(t.tag);
      out.add(
          RowFactory.create(
              key, HashtagPaneProcessor.COUNTED, t.tag, t.pane, t.n, t.tweets, t.maxEventMs,
              null, null, null, null, null, null, null));
    }
    return out.iterator();
  }

  private static void tally(
      Map<Tally, Tally> tallies, String key, long pane, long eventMs, boolean first) {
    Tally probe = new Tally(key, pane);
    Tally t = tallies.putIfAbsent(probe, probe);
    if (t == null) {
      t = probe;
    }
    t.n++;
    if (first) {
      t.tweets++;
    }
    if (eventMs > t.maxEventMs) {
      t.maxEventMs = eventMs;
    }
  }

  private static Row sideRow(Row record) {
    int partition = record.getInt(3);
    long offset = record.getLong(4);
    return RowFactory.create(
        -1 - (int) Math.floorMod(offset * 31 + partition, (long) SPREAD),
        record.getInt(0), null, null, 0L, 0L, null, partition, offset,
        record.isNullAt(5) ? null : record.get(5),
        record.isNullAt(6) ? null : record.get(6),
        record.isNullAt(7) ? null : record.getString(7),
        record.isNullAt(8) ? null : record.getLong(8),
        record.isNullAt(9) ? null : record.get(9));
  }

  private static int partitionId() {
    TaskContext task = TaskContext.get();
    return task == null ? 0 : task.partitionId();
  }
}
