package trending.sensors;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.util.LongAccumulator;

/**
 * The writes of one task to its state store partition, counted: the bytes of every key and value
 * put and of every key removed go to {@code written} (the batch's state bytes written) when the
 * task commits.
 */
final class WrittenStore {
  private final StateStore store;
  private final LongAccumulator written;
  private long bytes;

  WrittenStore(StateStore store, LongAccumulator written) {
    this.store = store;
    this.written = written;
  }

  void put(UnsafeRow key, UnsafeRow value) {
    bytes += key.getSizeInBytes() + value.getSizeInBytes();
    store.put(key, value, StateStores.DEFAULT);
  }

  void remove(UnsafeRow key) {
    bytes += key.getSizeInBytes();
    store.remove(key, StateStores.DEFAULT);
  }

  void commit() {
    store.commit();
    written.add(bytes);
  }
}
