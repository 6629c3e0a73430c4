package trending.sensors;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
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
 * Events that arrived but that the watermark has not passed yet ({@code ts >= W}), one state row
 * each, keyed by order key. In every batch each store partition hands out (and forgets) the rows
 * the batch's watermark passed ({@code ts < W}) and keeps the batch's new pending events.
 */
final class PendingEvents implements StateStores.Update<Row, Row> {
  private static final long serialVersionUID = 1L;
  static final StructType KEY =
      new StructType()
          .add("ts", DataTypes.LongType, false)
          .add("kind", DataTypes.IntegerType, false)
          .add("partition", DataTypes.IntegerType, false)
          .add("offset", DataTypes.LongType, false);
  static final StructType VALUE =
      new StructType()
          .add("id", DataTypes.LongType, false)
          .add("x", DataTypes.DoubleType, false)
          .add("y", DataTypes.DoubleType, false)
          .add("v", DataTypes.DoubleType, false);

  private final long watermarkMs;
  private final LongAccumulator stillPending;
  private final LongAccumulator written;

  PendingEvents(long watermarkMs, LongAccumulator stillPending, LongAccumulator written) {
    this.watermarkMs = watermarkMs;
    this.stillPending = stillPending;
    this.written = written;
  }

  @Override
  public Iterator<Row> apply(StateStore store, Iterator<Row> arrived) {
    List<Row> released = new ArrayList<>();
    List<UnsafeRow> forget = new ArrayList<>();
    long kept = 0;
    WrittenStore out = new WrittenStore(store, written);
    StateStoreIterator<UnsafeRowPair> stored = out.iterator();
    try {
      while (stored.hasNext()) {
        UnsafeRowPair pair = stored.next();
        if (pair.key().getLong(0) < watermarkMs) {
          released.add(event(pair.key(), pair.value()));
          forget.add(pair.key().copy());
        } else {
          kept++;
        }
      }
    } finally {
      stored.close();
    }
    for (UnsafeRow key : forget) {
      out.remove(key);
    }
    StoreRows keys = new StoreRows(KEY);
    StoreRows values = new StoreRows(VALUE);
    while (arrived.hasNext()) {
      Row e = arrived.next();
      UnsafeRow key =
          keys.of(
              e.getLong(Events.TS), e.getInt(Events.KIND), e.getInt(Events.PARTITION),
              e.getLong(Events.OFFSET));
      UnsafeRow value =
          values.of(
              e.getLong(Events.ID), e.getDouble(Events.X), e.getDouble(Events.Y),
              e.getDouble(Events.V));
      out.put(key, value);
      kept++;
    }
    out.commit();
    stillPending.add(kept);
    return released.iterator();
  }

  private static Row event(UnsafeRow key, UnsafeRow value) {
    return RowFactory.create(
        key.getInt(1), key.getLong(0), key.getInt(2), key.getLong(3), value.getLong(0),
        value.getDouble(1), value.getDouble(2), value.getDouble(3));
  }
}
