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
  private final MaxAccumulator maxEventMs;
  private final HashtagPaneProcessor processor;
  private final PaneCombiner combiner;

  public HashtagState(long sizeMs, long hopMs, long alignMs, String job) {
    SparkContext context = SparkContext.getOrCreate();
    tweets = context.longAccumulator("trending-tweets-" + job);
    maxEventMs = new MaxAccumulator();
    context.register(maxEventMs, "trending-max-event-" + job);
    SlidingGeometry geometry = new SlidingGeometry(sizeMs, hopMs, alignMs);
    processor = new HashtagPaneProcessor(geometry, job, tweets, maxEventMs);
    combiner = new PaneCombiner(geometry);
  }

  /** On-time tweets counted since {@link #resetFigures}. */
  public long tweetCount() {
    return tweets.value();
  }

  /** Newest on-time event time since {@link #resetFigures}, {@code Long.MIN_VALUE} if none. */
  public long newestEventMs() {
    return maxEventMs.value();
  }

  /** Clears the batch figures; call before running a batch. */
  public void resetFigures() {
    tweets.reset();
    maxEventMs.reset();
  }

  /**
   * Runs the map-side half on batch {@code records} into Spark's no-op sink: it pays class
   * loading, code generation and JIT before the first micro-batch does.
   */
  public void warm(Dataset<Row> records) {
    combined(records).write().format("noop").mode("overwrite").save();
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
    return combined(records)
        .groupBy(functions.col("key"))
        .as(Encoders.INT(), Encoders.row(PaneCombiner.OUTPUT))
        .transformWithState(processor, TimeMode.EventTime(), OutputMode.Update(), Encoders.row(OUTPUT));
  }
}
