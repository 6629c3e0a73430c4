package trending.sensors;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;

/**
 * The readings of each grid cell that are in their window, with their match counts: one state row
 * per cell. Per batch and cell: the new readings go in, the notices mark evicted readings, then
 * each query of the batch that touches the cell, in order, matches every reading of the cell that
 * was in its window at the query ({@code key(r) < key(q) < key(evictor of r)}) within the query's
 * distance, adding one to the reading's count. Evicted readings leave the cell, and those matched
 * at least {@code threshold} times are published as popular (SPL's before-eviction event).
 */
final class Cells implements StateStores.Update<Row, Row> {
  private static final long serialVersionUID = 1L;
  static final StructType KEY = new StructType().add("cell", DataTypes.LongType, false);
  static final StructType VALUE = new StructType().add("readings", DataTypes.BinaryType, false);
  static final int MATCH = 0, POPULAR = 1;
  static final StructType OUTPUT =
      new StructType()
          .add("kind", DataTypes.IntegerType, false)
          .add("query_id", DataTypes.LongType, false)
          .add("sensor_id", DataTypes.LongType, false)
          .add("value", DataTypes.DoubleType, false)
          .add("reading_ts", DataTypes.LongType, false)
          .add("query_ts", DataTypes.LongType, false)
          .add("x", DataTypes.DoubleType, false)
          .add("y", DataTypes.DoubleType, false)
          .add("matches", DataTypes.IntegerType, false);

  private final int threshold;
  private final LongAccumulator matchCount;
  private final LongAccumulator popularCount;

  Cells(int threshold, LongAccumulator matches, LongAccumulator popular) {
    this.threshold = threshold;
    this.matchCount = matches;
    this.popularCount = popular;
  }

  @Override
  public Iterator<Row> apply(StateStore store, Iterator<Row> rows) {
    Map<Long, List<Row>> byCell = new LinkedHashMap<>();
    List<Row> wide = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      if (row.getInt(CellInput.TYPE) == CellInput.WIDE) {
        wide.add(row);
      } else {
        byCell.computeIfAbsent(row.getLong(CellInput.CELL), k -> new ArrayList<>()).add(row);
      }
    }
    if (!wide.isEmpty()) { // a wide query probes every cell of this partition that holds readings
      for (long cell : heldCells(store)) byCell.putIfAbsent(cell, new ArrayList<>());
      for (List<Row> cellRows : byCell.values()) cellRows.addAll(wide);
    }
    StoreRows keys = new StoreRows(KEY);
    StoreRows values = new StoreRows(VALUE);
    List<Row> out = new ArrayList<>();
    for (Map.Entry<Long, List<Row>> cell : byCell.entrySet()) {
      UnsafeRow key = keys.of(cell.getKey());
      UnsafeRow stored = store.get(key, StateStores.DEFAULT);
      List<CellReading> readings =
          stored == null ? new ArrayList<>() : CellReading.decode(stored.getBinary(0));
      List<CellReading> kept = apply(cell.getKey(), readings, cell.getValue(), out);
      if (kept.isEmpty()) {
        if (stored != null) store.remove(key, StateStores.DEFAULT);
      } else {
        store.put(key, values.of((Object) CellReading.encode(kept)), StateStores.DEFAULT);
      }
    }
    store.commit();
    return out.iterator();
  }

  /** The cells of {@code store} that hold readings. */
  private static List<Long> heldCells(StateStore store) {
    List<Long> cells = new ArrayList<>();
    StateStoreIterator<UnsafeRowPair> pairs = store.iterator(StateStores.DEFAULT);
    try {
      while (pairs.hasNext()) cells.add(pairs.next().key().getLong(0));
    } finally {
      pairs.close();
    }
    return cells;
  }

  /** One cell's batch (see the class comment); returns the readings still in their windows. */
  private List<CellReading> apply(long cell, List<CellReading> readings, List<Row> rows,
      List<Row> out) {
    List<Row> queries = new ArrayList<>();
    List<Row> notices = new ArrayList<>();
    for (Row row : rows) {
      switch (row.getInt(CellInput.TYPE)) {
        case CellInput.READING -> readings.add(CellReading.of(row));
        case CellInput.QUERY, CellInput.WIDE -> queries.add(row);
        default -> notices.add(row);
      }
    }
    markEvicted(cell, readings, notices);
    queries.sort(QUERY_ORDER);
    long matched = 0;
    for (Row q : queries) {
      double qx = q.getDouble(CellInput.X), qy = q.getDouble(CellInput.Y);
      double d = q.getDouble(CellInput.V);
      for (CellReading r : readings) {
        if (r.within(qx, qy, d) && r.inWindowAt(q)) {
          r.matches++;
          matched++;
          out.add(RowFactory.create(MATCH, q.getLong(CellInput.ID), r.sensor, r.value, r.ts,
              q.getLong(CellInput.TS), r.x, r.y, 0));
        }
      }
    }
    matchCount.add(matched);
    List<CellReading> kept = new ArrayList<>(readings.size());
    for (CellReading r : readings) {
      if (!r.evicted) {
        kept.add(r);
      } else if (r.matches > 0 && r.matches >= threshold) {
        popularCount.add(1);
        out.add(RowFactory.create(POPULAR, 0L, r.sensor, r.value, r.ts, 0L, r.x, r.y, r.matches));
      }
    }
    return kept;
  }

  private static void markEvicted(long cell, List<CellReading> readings, List<Row> notices) {
    if (notices.isEmpty()) return;
    Map<List<Long>, CellReading> byId = new HashMap<>();
    for (CellReading r : readings) byId.put(List.of(r.w, r.seq), r);
    for (Row n : notices) {
      CellReading r = byId.get(List.of(n.getLong(CellInput.W), n.getLong(CellInput.SEQ)));
      if (r == null) {
        throw new IllegalStateException("cell " + cell + " has no reading "
            + n.getLong(CellInput.SEQ) + " of window " + n.getLong(CellInput.W)
            + " to evict: the state store does not match the committed output");
      }
      r.evicted = true;
      r.ets = n.getLong(CellInput.ETS);
      r.epart = n.getInt(CellInput.EPART);
      r.eoff = n.getLong(CellInput.EOFF);
    }
  }

  private static final Comparator<Row> QUERY_ORDER =
      Comparator.<Row>comparingLong(r -> r.getLong(CellInput.TS))
          .thenComparingInt(r -> r.getInt(CellInput.PARTITION))
          .thenComparingLong(r -> r.getLong(CellInput.OFFSET));
}
