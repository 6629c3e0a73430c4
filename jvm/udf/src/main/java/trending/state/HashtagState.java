package trending.state;

import org.apache.spark.SparkContext;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.AccumulatorV2;
import org.apache.spark.util.LongAccumulator;

/**
 * The stateful step of the hashtags job, for Python: {@link HashtagPaneProcessor} run by
 * Spark's {@code transformWithState} over rows grouped by their {@code key} column, and the
 * accumulators that carry the batch figures (on-time tweets, newest event time) to the driver.
 */
public final class HashtagState {
  public static final StructType OUTPUT =
      new StructType()
          .add("kind", DataTypes.IntegerType, false)
          .add("window_start", DataTypes.LongType, true)
          .add("tag", DataTypes.StringType, true)
          .add("count", DataTypes.LongType, true)
          .add("partition", DataTypes.IntegerType, true)
          .add("offset", DataTypes.LongType, true)
          .add("key", DataTypes.BinaryType, true)
          .add("value", DataTypes.BinaryType, true)
          .add("reason", DataTypes.StringType, true)
          .add("record_ts", DataTypes.LongType, true)
          .add("headers", PaneCombiner.HEADERS, true);

  private final LongAccumulator tweets;
  private final AccumulatorV2<Long, ?> maxEventMs;
  private final LongAccumulator sideRows;
  private final HashtagPaneProcessor processor;
  private final PaneCombiner combiner;

  /** The hashtags job's step: the keys of a record are the hashtags of its {@code text}. */
  public HashtagState(long sizeMs, long hopMs, long alignMs, String job) {
    this(sizeMs, hopMs, alignMs, job, true);
  }

  /**
   * {@code keysFromText}: see {@link PaneCombiner#PaneCombiner}; false: the {@code text} column
   * holds each record's one key, and the accumulators are Spark's own classes only, because the
   * driver deserializes task results with the class loader it started with, which does not see
   * this jar when it was added to a running session ({@code ADD JAR}).
   */
  public HashtagState(long sizeMs, long hopMs, long alignMs, String job, boolean keysFromText) {
    SparkContext context = SparkContext.getOrCreate();
    tweets = context.longAccumulator("trending-tweets-" + job);
    sideRows = context.longAccumulator("trending-side-rows-" + job);
    if (keysFromText) {
      MaxAccumulator max = new MaxAccumulator();
      context.register(max, "trending-max-event-" + job);
      maxEventMs = max;
    } else {
      maxEventMs = context.collectionAccumulator("trending-max-event-" + job);
    }
    SlidingGeometry geometry = new SlidingGeometry(sizeMs, hopMs, alignMs);
    processor = new HashtagPaneProcessor(geometry, job, tweets, maxEventMs, sideRows);
    combiner = new PaneCombiner(geometry, keysFromText);
  }

  /** On-time tweets counted since {@link #resetFigures}. */
  public long tweetCount() {
    return tweets.value();
  }

  /** Newest on-time event time since {@link #resetFigures}, {@code Long.MIN_VALUE} if none. */
  public long newestEventMs() {
    Object value = maxEventMs.value();
    if (value instanceof Long max) {
      return max;
    }
    long max = Long.MIN_VALUE;
    for (Object each : (java.util.List<?>) value) {
      max = Math.max(max, (Long) each);
    }
    return max;
  }

  /**
   * Late and undecodable rows passed through since {@link #resetFigures}: never fewer than the
   * batch has (a stage Spark runs again can count some twice), so 0 means there are none.
   */
  public long sideRowCount() {
    return sideRows.value();
  }

  /** Clears the batch figures; call before running a batch. */
  public void resetFigures() {
    tweets.reset();
    sideRows.reset();
    maxEventMs.reset();
  }

  /**
   * The window-count rows of batch {@code records}, as {@link #apply} makes them of a
   * micro-batch, with a state store of the query's own that is dropped after it: for the
   * warm-up, which runs the whole per-batch plan before the first micro-batch. A batch query
   * has no event time, so the processor runs without timers here.
   */
  public Dataset<Row> batchCounts(Dataset<Row> records) {
    records.sparkSession().streams(); // starts the state store coordinator the query needs
    return counted(records, TimeMode.None());
  }

  private Dataset<Row> combined(Dataset<Row> records) {
    Column[] columns = new Column[PaneCombiner.INPUT_COLUMNS.length];
    for (int i = 0; i < columns.length; i++) {
      columns[i] = functions.col(PaneCombiner.INPUT_COLUMNS[i]);
    }
    return records.select(columns).mapPartitions(combiner, Encoders.row(PaneCombiner.OUTPUT));
  }

  /**
   * The window-count rows ({@link #OUTPUT}) of streaming decoded records
   * ({@link PaneCombiner#INPUT_COLUMNS}).
   */
  public Dataset<Row> apply(Dataset<Row> records) {
    return counted(records, TimeMode.EventTime());
  }

  private Dataset<Row> counted(Dataset<Row> records, TimeMode timeMode) {
    return combined(records)
        .groupBy(functions.col("key"))
        .as(Encoders.INT(), Encoders.row(PaneCombiner.OUTPUT))
        .transformWithState(processor, timeMode, OutputMode.Update(), Encoders.row(OUTPUT));
  }
}
