package trending.sensors;

import java.util.Comparator;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * A reading in a cell's state: its window and number there, its order key, its fields and how
 * many queries matched it so far; {@code evicted} once the batch's notice says which reading
 * evicts it ({@code (ets, 0, epart, eoff)}).
 *
 * <p>Each reading is its own state row, key {@link #KEY} {@code (cell, w, seq)} (scanned by its
 * first column, the cell) and value {@link #VALUE}: a batch writes the readings it puts, the
 * readings whose match count changed and the removals of evicted readings, never a whole cell.
 */
final class CellReading {
  static final StructType KEY =
      new StructType()
          .add("cell", DataTypes.LongType, false)
          .add("w", DataTypes.LongType, false)
          .add("seq", DataTypes.LongType, false);
  static final StructType CELL = new StructType().add("cell", DataTypes.LongType, false);
  static final StructType VALUE =
      new StructType()
          .add("ts", DataTypes.LongType, false)
          .add("partition", DataTypes.IntegerType, false)
          .add("offset", DataTypes.LongType, false)
          .add("sensor", DataTypes.LongType, false)
          .add("x", DataTypes.DoubleType, false)
          .add("y", DataTypes.DoubleType, false)
          .add("value", DataTypes.DoubleType, false)
          .add("matches", DataTypes.IntegerType, false);

  /** Insertion order within a cell: by window, then number. */
  static final Comparator<CellReading> ORDER =
      Comparator.<CellReading>comparingLong(r -> r.w).thenComparingLong(r -> r.seq);

  final long w, seq, ts, offset, sensor;
  final int partition;
  final double x, y, value;
  final boolean stored; // read from the state store, not put by this batch
  int matches;
  boolean matched; // matched by a query of this batch
  boolean evicted;
  long ets, eoff;
  int epart;

  CellReading(long w, long seq, long ts, int partition, long offset, long sensor, double x,
      double y, double value, int matches, boolean stored) {
    this.w = w;
    this.seq = seq;
    this.ts = ts;
    this.partition = partition;
    this.offset = offset;
    this.sensor = sensor;
    this.x = x;
    this.y = y;
    this.value = value;
    this.matches = matches;
    this.stored = stored;
  }

  /** A reading the batch puts in its cell ({@link CellInput} layout). */
  static CellReading of(Row in) {
    return new CellReading(in.getLong(CellInput.W), in.getLong(CellInput.SEQ),
        in.getLong(CellInput.TS), in.getInt(CellInput.PARTITION), in.getLong(CellInput.OFFSET),
        in.getLong(CellInput.ID), in.getDouble(CellInput.X), in.getDouble(CellInput.Y),
        in.getDouble(CellInput.V), 0, false);
  }

  /** A reading of the state store, from its key and value rows. */
  static CellReading of(UnsafeRow key, UnsafeRow value) {
    return new CellReading(key.getLong(1), key.getLong(2), value.getLong(0), value.getInt(1),
        value.getLong(2), value.getLong(3), value.getDouble(4), value.getDouble(5),
        value.getDouble(6), value.getInt(7), true);
  }

  /** The value row's columns ({@link #VALUE}). */
  Object[] values() {
    return new Object[] {ts, partition, offset, sensor, x, y, value, matches};
  }

  /** Whether this reading was in its window when query {@code q} was applied, before it. */
  boolean inWindowAt(Row q) {
    long qts = q.getLong(CellInput.TS);
    int qpart = q.getInt(CellInput.PARTITION);
    long qoff = q.getLong(CellInput.OFFSET);
    boolean inserted =
        Events.compare(ts, Events.READING, partition, offset, qts, Events.QUERY, qpart, qoff) < 0;
    return inserted
        && (!evicted
            || Events.compare(qts, Events.QUERY, qpart, qoff, ets, Events.READING, epart, eoff)
                < 0);
  }

  /** {@code sqrt((x - qx)^2 + (y - qy)^2) <= d}. */
  boolean within(double qx, double qy, double d) {
    double dx = x - qx, dy = y - qy;
    return Math.sqrt(dx * dx + dy * dy) <= d;
  }
}
