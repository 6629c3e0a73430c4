package trending.sensors;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.util.LongAccumulator;

/**
 * Where each reading of a sliding count(N) window is: state row {@code (w, seq) -> cell} for
 * reading number {@code seq} of window {@code w}, from its insertion until its eviction. Inserting
 * reading {@code s} evicts reading {@code s - N} (SPL count eviction: the window holds the last N
 * readings); the index turns that into a notice to the evicted reading's cell, carrying the order
 * key of the evicting reading, and forgets the row.
 *
 * <p>Two forms: {@link Global} (one window; readings numbered by the driver's global order,
 * index rows spread by {@code seq}) and {@link PerSensor} (a window per sensor; a store partition
 * owns whole sensors, numbers their readings itself and keeps the count in row {@code (w, 0)}).
 */
final class WindowIndex {
  static final StructType KEY =
      new StructType().add("w", DataTypes.LongType, false).add("seq", DataTypes.LongType, false);
  static final StructType VALUE = new StructType().add("cell", DataTypes.LongType, false);

  /** Index operations of the global window, spread over partitions by {@code seq}. */
  static final StructType OPERATION =
      new StructType()
          .add("op", DataTypes.IntegerType, false)
          .add("seq", DataTypes.LongType, false)
          .add("cell", DataTypes.LongType, false)
          .add("ets", DataTypes.LongType, false)
          .add("epart", DataTypes.IntegerType, false)
          .add("eoff", DataTypes.LongType, false);

  static final int PUT = 0, EVICT = 1;

  private WindowIndex() {}

  /** Put reading {@code seq} (in {@code cell}). */
  static Row put(long seq, long cell) {
    return RowFactory.create(PUT, seq, cell, 0L, 0, 0L);
  }

  /** Evict reading {@code seq}, as reading {@code (ets, epart, eoff)} comes in. */
  static Row evict(long seq, long ets, int epart, long eoff) {
    return RowFactory.create(EVICT, seq, 0L, ets, epart, eoff);
  }

  /** The global window's index: puts first, then evictions (an evicted row may be put now). */
  static final class Global implements StateStores.Update<Row, Row> {
    private static final long serialVersionUID = 1L;
    private final LongAccumulator written;

    Global(LongAccumulator written) {
      this.written = written;
    }

    @Override
    public Iterator<Row> apply(StateStore store, Iterator<Row> operations) {
      WrittenStore out = new WrittenStore(store, written);
      StoreRows keys = new StoreRows(KEY);
      StoreRows values = new StoreRows(VALUE);
      List<Row> evictions = new ArrayList<>();
      while (operations.hasNext()) {
        Row op = operations.next();
        if (op.getInt(0) == PUT) {
          out.put(keys.of(0L, op.getLong(1)), values.of(op.getLong(2)));
        } else {
          evictions.add(op);
        }
      }
      List<Row> notices = new ArrayList<>(evictions.size());
      for (Row op : evictions) {
        long seq = op.getLong(1);
        long cell = take(out, keys.of(0L, seq), 0L, seq);
        notices.add(CellInput.notice(cell, 0L, seq, op.getLong(3), op.getInt(4), op.getLong(5)));
      }
      out.commit();
      return notices.iterator();
    }
  }

  /** Per-sensor windows: numbers each sensor's readings in order, emits readings and notices. */
  static final class PerSensor implements StateStores.Update<Row, Row> {
    private static final long serialVersionUID = 1L;
    private final long size;
    private final Grid grid;
    private final LongAccumulator written;

    PerSensor(long size, Grid grid, LongAccumulator written) {
      this.size = size;
      this.grid = grid;
      this.written = written;
    }

    @Override
    public Iterator<Row> apply(StateStore store, Iterator<Row> readings) {
      Map<Long, List<Row>> bySensor = new LinkedHashMap<>();
      while (readings.hasNext()) {
        Row r = readings.next();
        bySensor.computeIfAbsent(r.getLong(Events.ID), k -> new ArrayList<>()).add(r);
      }
      WrittenStore writes = new WrittenStore(store, written);
      StoreRows keys = new StoreRows(KEY);
      StoreRows values = new StoreRows(VALUE);
      List<Row> out = new ArrayList<>();
      for (Map.Entry<Long, List<Row>> sensor : bySensor.entrySet()) {
        long w = sensor.getKey();
        List<Row> rows = sensor.getValue();
        rows.sort(ORDER);
        UnsafeRow counter = writes.get(keys.of(w, 0L));
        long count = counter == null ? 0L : counter.getLong(0);
        for (Row r : rows) {
          long seq = ++count;
          Row reading = CellInput.reading(r, grid, w, seq);
          out.add(reading);
          writes.put(keys.of(w, seq), values.of(reading.getLong(CellInput.CELL)));
          if (seq > size) {
            long cell = take(writes, keys.of(w, seq - size), w, seq - size);
            out.add(CellInput.notice(cell, w, seq - size, r.getLong(Events.TS),
                r.getInt(Events.PARTITION), r.getLong(Events.OFFSET)));
          }
        }
        writes.put(keys.of(w, 0L), values.of(count));
      }
      writes.commit();
      return out.iterator();
    }
  }

  /** Order key of readings: {@code (ts, partition, offset)}. */
  static final Comparator<Row> ORDER =
      Comparator.<Row>comparingLong(r -> r.getLong(Events.TS))
          .thenComparingInt(r -> r.getInt(Events.PARTITION))
          .thenComparingLong(r -> r.getLong(Events.OFFSET));

  /** The cell of reading {@code (w, seq)}, forgotten from the index. */
  private static long take(WrittenStore store, UnsafeRow key, long w, long seq) {
    UnsafeRow found = store.get(key);
    if (found == null) {
      throw new IllegalStateException(
          "the window index has no reading " + seq + " of window " + w
              + ": the state store does not match the committed output");
    }
    long cell = found.getLong(0);
    store.remove(key.copy());
    return cell;
  }
}
