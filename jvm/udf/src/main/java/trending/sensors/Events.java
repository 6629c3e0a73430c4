package trending.sensors;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Row layouts of the sensor job's steps and the order events are applied in.
 *
 * <p>Order key of an event: {@code (ts, kind, partition, offset)} with {@code kind} 0 for a
 * reading and 1 for a query, so readings go before queries at equal ts, then by Kafka partition
 * and offset.
 */
public final class Events {
  public static final int READING = 0;
  public static final int QUERY = 1;

  /** Applicable events: a reading's id is its sensor id and v its value; a query's v its distance. */
  public static final StructType EVENT =
      new StructType()
          .add("kind", DataTypes.IntegerType, false)
          .add("ts", DataTypes.LongType, false)
          .add("partition", DataTypes.IntegerType, false)
          .add("offset", DataTypes.LongType, false)
          .add("id", DataTypes.LongType, false)
          .add("x", DataTypes.DoubleType, false)
          .add("y", DataTypes.DoubleType, false)
          .add("v", DataTypes.DoubleType, false);

  static final int KIND = 0, TS = 1, PARTITION = 2, OFFSET = 3, ID = 4, X = 5, Y = 6, V = 7;

  private Events() {}

  /** Compares order keys {@code (ts, kind, partition, offset)}. */
  static int compare(long ts1, int kind1, int part1, long off1, long ts2, int kind2, int part2,
      long off2) {
    int c = Long.compare(ts1, ts2);
    if (c != 0) return c;
    c = Integer.compare(kind1, kind2);
    if (c != 0) return c;
    c = Integer.compare(part1, part2);
    return c != 0 ? c : Long.compare(off1, off2);
  }

  static int kind(Row row) {
    return row.getInt(KIND);
  }
}
