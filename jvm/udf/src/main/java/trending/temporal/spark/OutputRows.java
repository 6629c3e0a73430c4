package trending.temporal.spark;

import java.io.Serializable;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import scala.jdk.javaapi.CollectionConverters;
import trending.temporal.Timeline;

/** What a {@link TemporalKeyProcessor} outputs: results, rejected input, progress. */
interface OutputRows extends Serializable {
  int RESULT = 10;
  int LATE = 11;
  int PROGRESS = 12;

  /** Columns that order a key's input rows of a batch after the sync time. */
  int[] order();

  /** The output of one final row of {@code key}. */
  Row result(Object key, trending.temporal.Row row);

  /** The output of an input row that is {@code LATE} or {@code DEAD}, if any. */
  void rejected(int kind, Row record, String reason, List<Row> out);

  /** The output that tells the driver about a key's input rows of a batch, if any. */
  void progress(List<Row> records, List<Row> out);

  /** A row's value as a double, or null: null for top_k's list, and for no value. */
  static Double value(Object value) {
    return value instanceof Number n && !(value instanceof BigInteger) ? n.doubleValue()
        : value instanceof BigInteger big ? big.doubleValue() : null;
  }

  /** top_k's values (largest first) as doubles; empty for any other value. */
  static scala.collection.Seq<Double> values(Object value) {
    List<Double> out = new ArrayList<>();
    if (value instanceof List<?> list) {
      for (Object each : list) {
        out.add(((Number) each).doubleValue());
      }
    }
    return CollectionConverters.asScala(out);
  }

  /** A row's end, null when it holds until the end of time. */
  static Long end(long end) {
    return end == Timeline.END_OF_TIME ? null : end;
  }
}
