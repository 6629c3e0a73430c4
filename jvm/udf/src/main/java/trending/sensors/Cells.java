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
 * per reading ({@link CellReading}). Per batch and cell: the new readings go in, the notices mark
 * evicted readings, then each query of the batch that touches the cell, in order, matches every
 * reading of the cell that was in its window at the query ({@code key(r) < key(q) < key(evictor
 * of r)}) within the query's distance, adding one to the reading's count. Evicted readings leave
 * the cell, and those matched at least {@code threshold} times are published as popular (SPL's
 * before-eviction event).
 */
final class Cells implements StateStores.Update<Row, Row> {
  private static final long serialVersionUID = 1L;
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
  private final LongAccumulator written;

  Cells(int threshold, LongAccumulator matches, LongAccumulator popular,
      LongAccumulator written) {
    this.threshold = threshold;
    this.matchCount = matches;
    this.popularCount = popular;
    this.written = written;
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
    WrittenStore out = new WrittenStore(store, written);
    Map<Long, List<CellReading>> held = null;
    if (!wide.isEmpty()) { // a wide query probes every cell of this partition that holds readings
      held = heldReadings(out);
      for (long cell : held.keySet()) byCell.putIfAbsent(cell, new ArrayList<>());
      for (List<Row> cellRows : byCell.values()) cellRows.addAll(wide);
    }
    Rows rowsOf = new Rows();
    List<Row> output = new ArrayList<>();
    for (Map.Entry<Long, List<Row>> cell : byCell.entrySet()) {
      long id = cell.getKey();
      List<CellReading> stored = held == null ? null : held.getOrDefault(id, new ArrayList<>());
      apply(id, out, stored, cell.getValue(), rowsOf, output);
    }
    out.commit();
    return output.iterator();
  }

  /** The store's key and value rows (one set per task: not thread safe). */
  private static final class Rows {
    final StoreRows key = new StoreRows(CellReading.KEY);
    final StoreRows cell = new StoreRows(CellReading.CELL);
    final StoreRows value = new StoreRows(CellReading.VALUE);

    UnsafeRow keyOf(long cell, CellReading r) {
      return key.of(cell, r.w, r.seq);
    }
  }

  /** Every reading of {@code store}, by cell, each cell's in insertion order. */
  private static Map<Long, List<CellReading>> heldReadings(WrittenStore store) {
    Map<Long, List<CellReading>> cells = new LinkedHashMap<>();
    StateStoreIterator<UnsafeRowPair> pairs = store.iterator();
    try {
      while (pairs.hasNext()) {
        UnsafeRowPair pair = pairs.next();
        cells.computeIfAbsent(pair.key().getLong(0), k -> new ArrayList<>())
            .add(CellReading.of(pair.key(), pair.value()));
      }
    } finally {
      pairs.close();
    }
    for (List<CellReading> readings : cells.values()) readings.sort(CellReading.ORDER);
    return cells;
  }

  /** The readings of {@code cell} in {@code store}, in insertion order. */
  private static List<CellReading> cellReadings(WrittenStore store, long cell, Rows rows) {
    List<CellReading> readings = new ArrayList<>();
    StateStoreIterator<UnsafeRowPair> pairs = store.prefixScan(rows.cell.of(cell));
    try {
      while (pairs.hasNext()) {
        UnsafeRowPair pair = pairs.next();
        readings.add(CellReading.of(pair.key(), pair.value()));
      }
    } finally {
      pairs.close();
    }
    readings.sort(CellReading.ORDER);
    return readings;
  }

  /**
   * One cell's batch (see the class comment). Its stored readings are read only when a query
   * probes it ({@code stored}: already read, or null); otherwise the batch puts its new readings
   * and reads each reading a notice evicts.
   */
  private void apply(long cell, WrittenStore store, List<CellReading> stored, List<Row> rows,
      Rows rowsOf, List<Row> output) {
    List<Row> queries = new ArrayList<>();
    List<Row> notices = new ArrayList<>();
    List<CellReading> added = new ArrayList<>();
    for (Row row : rows) {
      switch (row.getInt(CellInput.TYPE)) {
        case CellInput.READING -> added.add(CellReading.of(row));
        case CellInput.QUERY, CellInput.WIDE -> queries.add(row);
        default -> notices.add(row);
      }
    }
    List<CellReading> readings =
        stored != null ? stored : queries.isEmpty() ? new ArrayList<>()
            : cellReadings(store, cell, rowsOf);
    readings.addAll(added);
    markEvicted(cell, store, readings, notices, rowsOf, queries.isEmpty() && stored == null);
    queries.sort(QUERY_ORDER);
    long matched = 0;
    for (Row q : queries) {
      double qx = q.getDouble(CellInput.X), qy = q.getDouble(CellInput.Y);
      double d = q.getDouble(CellInput.V);
      for (CellReading r : readings) {
        if (r.within(qx, qy, d) && r.inWindowAt(q)) {
          r.matches++;
          r.matched = true;
          matched++;
          output.add(RowFactory.create(MATCH, q.getLong(CellInput.ID), r.sensor, r.value, r.ts,
              q.getLong(CellInput.TS), r.x, r.y, 0));
        }
      }
    }
    matchCount.add(matched);
    for (CellReading r : readings) {
      if (r.evicted) {
        if (r.stored) store.remove(rowsOf.keyOf(cell, r));
        if (r.matches > 0 && r.matches >= threshold) {
          popularCount.add(1);
          output.add(RowFactory.create(POPULAR, 0L, r.sensor, r.value, r.ts, 0L, r.x, r.y,
              r.matches));
        }
      } else if (!r.stored || r.matched) {
        store.put(rowsOf.keyOf(cell, r), rowsOf.value.of(r.values()));
      }
    }
  }

  /**
   * Marks the readings the notices evict; with {@code fetch}, a reading not among
   * {@code readings} is read from the store (and added) first.
   */
  private static void markEvicted(long cell, WrittenStore store, List<CellReading> readings,
      List<Row> notices, Rows rowsOf, boolean fetch) {
    if (notices.isEmpty()) return;
    Map<List<Long>, CellReading> byId = new HashMap<>();
    for (CellReading r : readings) byId.put(List.of(r.w, r.seq), r);
    for (Row n : notices) {
      long w = n.getLong(CellInput.W), seq = n.getLong(CellInput.SEQ);
      CellReading r = byId.get(List.of(w, seq));
      if (r == null && fetch) {
        UnsafeRow key = rowsOf.key.of(cell, w, seq);
        UnsafeRow value = store.get(key);
        if (value != null) {
          r = CellReading.of(key, value);
          readings.add(r);
        }
      }
      if (r == null) {
        throw new IllegalStateException("cell " + cell + " has no reading " + seq
            + " of window " + w + " to evict: the state store does not match the committed output");
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
