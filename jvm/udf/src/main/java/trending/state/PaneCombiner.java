package trending.state;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
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
 * ({@link Hashtags#keys}) are counted per {@code (tag, pane)} before anything is shuffled, and
 * the counts of a task go out packed per state bucket, so the shuffle, the sort before the state
 * step and the state step see one row per bucket and task instead of one per tweet and tag.
 *
 * <p>Input ({@link #INPUT_COLUMNS}): decoded records with their kind decided. Output
 * ({@link #OUTPUT}): per bucket ({@link HashtagPaneProcessor#bucketOf}) a row keyed by it whose
 * {@code value} packs its {@code (tag, pane, n)} counts ({@link #readPacked}: {@code n} tweets
 * hold the tag in the pane), with {@code tweets}, the tweets counted first under one of its tags
 * (each tweet once, under its first key), and their newest event time; tweets without hashtags
 * under a row without counts and a negative key; late and dead records pass through under
 * negative keys, with their Kafka timestamp and headers.
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

  private static final String[] NO_KEYS = {};

  private final SlidingGeometry geometry;
  private final boolean keysFromText;

  /**
   * {@code keysFromText}: the {@code text} column is a tweet's text, whose distinct hashtag keys
   * are counted (the hashtags job); else it is the key itself, one per record, {@code null} for
   * none (the library's sliding top-k over any key column).
   */
  public PaneCombiner(SlidingGeometry geometry, boolean keysFromText) {
    this.geometry = geometry;
    this.keysFromText = keysFromText;
  }

  /**
   * The tallies of one task, per {@code (tag, pane)}: tweets holding the tag, tweets counted first
   * under it, newest event. An open-addressing table over parallel arrays (linear probing, at
   * most half full), so counting a record allocates nothing once its {@code (tag, pane)} is in.
   * The slot hash mixes the tag's and the pane's hashes with a finalizer, because tags made of
   * similar syllables share the low bits of {@code String.hashCode}, which is all the slot index
   * looks at. The tag {@code null} (a tweet without hashtags) is stored as {@link #NO_TAG}.
   */
  static final class Tallies {
    private static final String NO_TAG = new String("no tag");
    private String[] tags = new String[1024];
    private long[] panes = new long[1024];
    private long[] n = new long[1024];
    private long[] tweets = new long[1024];
    private long[] maxEventMs = new long[1024];
    private int size;

    /** Count one tweet holding {@code tag} in {@code pane}; {@code first}: its first tag. */
    void add(String tag, long pane, long eventMs, boolean first) {
      String key = tag == null ? NO_TAG : tag;
      int slot = slotOf(key, pane);
      if (tags[slot] == null) {
        tags[slot] = key;
        panes[slot] = pane;
        maxEventMs[slot] = Long.MIN_VALUE;
        if (++size * 2 > tags.length) {
          grow();
          slot = slotOf(key, pane);
        }
      }
      n[slot]++;
      if (first) {
        tweets[slot]++;
      }
      if (eventMs > maxEventMs[slot]) {
        maxEventMs[slot] = eventMs;
      }
    }

    /** The slot holding {@code (key, pane)}, or the empty slot where it goes. */
    private int slotOf(String key, long pane) {
      int mask = tags.length - 1;
      int slot = mix(key, pane) & mask;
      while (true) {
        String held = tags[slot];
        if (held == null || (panes[slot] == pane && (held == key || held.equals(key)))) {
          return slot;
        }
        slot = (slot + 1) & mask;
      }
    }

    private static int mix(String key, long pane) {
      long h = key.hashCode() * 0x9E3779B97F4A7C15L + pane;
      h = (h ^ (h >>> 33)) * 0xFF51AFD7ED558CCDL;
      return (int) (h ^ (h >>> 33));
    }

    private void grow() {
      String[] oldTags = tags;
      long[] oldPanes = panes;
      long[] oldN = n;
      long[] oldTweets = tweets;
      long[] oldMax = maxEventMs;
      int capacity = oldTags.length * 2;
      tags = new String[capacity];
      panes = new long[capacity];
      n = new long[capacity];
      tweets = new long[capacity];
      maxEventMs = new long[capacity];
      for (int i = 0; i < oldTags.length; i++) {
        if (oldTags[i] != null) {
          int slot = slotOf(oldTags[i], oldPanes[i]);
          tags[slot] = oldTags[i];
          panes[slot] = oldPanes[i];
          n[slot] = oldN[i];
          tweets[slot] = oldTweets[i];
          maxEventMs[slot] = oldMax[i];
        }
      }
    }

    /**
     * One output row per bucket ({@link #OUTPUT}) with its tallies packed, and one for the
     * tweets without hashtags under {@code noTag}.
     */
    void emit(List<Row> out, int noTag) {
      Map<Integer, Packed> packed = new HashMap<>();
      for (int i = 0; i < tags.length; i++) {
        String key = tags[i];
        if (key == null) {
          continue;
        }
        if (key == NO_TAG) {
          out.add(countedRow(noTag, null, tweets[i], maxEventMs[i]));
          continue;
        }
        Packed bucket =
            packed.computeIfAbsent(HashtagPaneProcessor.bucketOf(key), b -> new Packed());
        bucket.add(key, panes[i], n[i], tweets[i], maxEventMs[i]);
      }
      for (Map.Entry<Integer, Packed> bucket : packed.entrySet()) {
        Packed p = bucket.getValue();
        out.add(countedRow(bucket.getKey(), p.bytes.toByteArray(), p.tweets, p.maxEventMs));
      }
    }
  }

  /** The packed counts of one bucket and its figures. */
  private static final class Packed {
    final ByteArrayOutputStream bytes = new ByteArrayOutputStream(64);
    long tweets;
    long maxEventMs = Long.MIN_VALUE;

    void add(String tag, long pane, long n, long firstTweets, long eventMs) {
      byte[] utf8 = tag.getBytes(StandardCharsets.UTF_8);
      Varints.write(bytes, utf8.length);
      bytes.write(utf8, 0, utf8.length);
      Varints.write(bytes, Varints.zigzag(pane));
      Varints.write(bytes, n);
      tweets += firstTweets;
      maxEventMs = Math.max(maxEventMs, eventMs);
    }
  }

  private static Row countedRow(int key, byte[] packed, long tweets, long maxEventMs) {
    return RowFactory.create(
        key, HashtagPaneProcessor.COUNTED, null, null, 0L, tweets, maxEventMs,
        null, null, null, packed, null, null, null);
  }

  /** A {@code (tag, pane, n)} count of a packed {@code value} ({@link #readPacked}). */
  public interface PackedCount {
    void accept(String tag, long pane, long n);
  }

  /**
   * Hands each {@code (tag, pane, n)} of a packed {@code value} to {@code counts}. Layout: per
   * count, varint UTF-8 length, the tag's UTF-8 bytes, zigzag varint pane start, varint n.
   */
  public static void readPacked(byte[] packed, PackedCount counts) {
    int[] at = {0};
    while (at[0] < packed.length) {
      int length = (int) Varints.read(packed, at);
      String tag = new String(packed, at[0], length, StandardCharsets.UTF_8);
      at[0] += length;
      long pane = Varints.unzigzag(Varints.read(packed, at));
      counts.accept(tag, pane, Varints.read(packed, at));
    }
  }

  @Override
  public Iterator<Row> call(Iterator<Row> records) {
    Tallies tallies = new Tallies();
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
      String text = record.isNullAt(2) ? null : record.getString(2);
      String[] keys =
          keysFromText ? Hashtags.keys(text) : text == null ? NO_KEYS : new String[] {text};
      if (keys.length == 0) {
        tallies.add(null, pane, eventMs, true);
      }
      for (int i = 0; i < keys.length; i++) {
        tallies.add(keys[i], pane, eventMs, i == 0);
      }
    }
    tallies.emit(out, noTag);
    return out.iterator();
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
