package trending.spl;

import org.apache.spark.sql.Row;

/**
 * A window's tuple from a Spark row: the plain values of its record columns ({@link ValueType}),
 * and, once an event has shown it, the typed row it comes back as (made once per tuple).
 */
final class SparkRecord {
  final Object[] values;
  Row typed;

  SparkRecord(Object[] values) {
    this.values = values;
  }
}
