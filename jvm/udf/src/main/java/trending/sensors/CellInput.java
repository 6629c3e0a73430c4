package trending.sensors;

import java.util.function.Consumer;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * Rows sent to a cell: a reading put in the window ({@code w}: its window, {@code seq}: its
 * number there), a query probing the cell, or the notice that reading {@code (w, seq)} of the cell
 * leaves its window at the order key {@code (ets, 0, epart, eoff)} of the reading that evicts it.
 * A query whose square covers more cells than a bound is a wide query instead: sent once to each
 * store partition (its {@code cell} only routes it there), where it probes every cell that holds
 * readings.
 */
final class CellInput {
  static final int READING = 0, QUERY = 1, NOTICE = 2, WIDE = 3;
  static final StructType SCHEMA =
      new StructType()
          .add("type", DataTypes.IntegerType, false)
          .add("cell", DataTypes.LongType, false)
          .add("ts", DataTypes.LongType, false)
          .add("partition", DataTypes.IntegerType, false)
          .add("offset", DataTypes.LongType, false)
          .add("id", DataTypes.LongType, false)
          .add("x", DataTypes.DoubleType, false)
          .add("y", DataTypes.DoubleType, false)
          .add("v", DataTypes.DoubleType, false)
          .add("w", DataTypes.LongType, false)
          .add("seq", DataTypes.LongType, false)
          .add("ets", DataTypes.LongType, false)
          .add("epart", DataTypes.IntegerType, false)
          .add("eoff", DataTypes.LongType, false);
  static final int TYPE = 0, CELL = 1, TS = 2, PARTITION = 3, OFFSET = 4, ID = 5, X = 6, Y = 7,
      V = 8, W = 9, SEQ = 10, ETS = 11, EPART = 12, EOFF = 13;

  private CellInput() {}

  /** Reading {@code event} (EVENT layout) as number {@code seq} of window {@code w}. */
  static Row reading(Row event, Grid grid, long w, long seq) {
    double x = event.getDouble(Events.X), y = event.getDouble(Events.Y);
    return RowFactory.create(
        READING, grid.cell(x, y), event.getLong(Events.TS), event.getInt(Events.PARTITION),
        event.getLong(Events.OFFSET), event.getLong(Events.ID), x, y, event.getDouble(Events.V),
        w, seq, 0L, 0, 0L);
  }

  /**
   * Query {@code event} to every cell of its square within {@code extent} (see {@link Grid}),
   * or, when that is more than {@code maxCells} cells, as a wide query to each of {@code routes}
   * (a cell value per store partition).
   */
  static void probes(Row event, Grid grid, int[] extent, long maxCells, long[] routes,
      Consumer<Row> out) {
    if (extent == null) return; // no reading was ever put in a cell
    double x = event.getDouble(Events.X), y = event.getDouble(Events.Y);
    double d = event.getDouble(Events.V);
    int x0 = Math.max(grid.low(x, d), extent[0]), x1 = Math.min(grid.high(x, d), extent[2]);
    int y0 = Math.max(grid.low(y, d), extent[1]), y1 = Math.min(grid.high(y, d), extent[3]);
    if (x0 > x1 || y0 > y1) return;
    if ((double) ((long) x1 - x0 + 1) * ((long) y1 - y0 + 1) > maxCells) {
      for (long route : routes) out.accept(query(WIDE, route, event, x, y, d));
      return;
    }
    for (long cx = x0; cx <= x1; cx++) {
      for (long cy = y0; cy <= y1; cy++) {
        out.accept(query(QUERY, Grid.pack((int) cx, (int) cy), event, x, y, d));
      }
    }
  }

  private static Row query(int type, long cell, Row event, double x, double y, double d) {
    return RowFactory.create(type, cell, event.getLong(Events.TS), event.getInt(Events.PARTITION),
        event.getLong(Events.OFFSET), event.getLong(Events.ID), x, y, d, 0L, 0L, 0L, 0, 0L);
  }

  /** Reading {@code (w, seq)} in {@code cell} leaves its window at reading {@code evictor}. */
  static Row notice(long cell, long w, long seq, long ets, int epart, long eoff) {
    return RowFactory.create(NOTICE, cell, 0L, 0, 0L, 0L, 0.0, 0.0, 0.0, w, seq, ets, epart, eoff);
  }
}
