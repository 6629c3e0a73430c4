package trending.sensors;

import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreIterator;
import org.apache.spark.sql.execution.streaming.state.UnsafeRowPair;
import org.apache.spark.util.LongAccumulator;

/**
 * One task's state store partition, its writes counted: the bytes of every key and value put and
 * of every key removed go to {@code written} (the batch's state bytes written) when the task
 * commits. The update functions read and write through it alone.
 */
final class WrittenStore {
  private final StateStore store;
  private final LongAccumulator written;
  private long bytes;

  WrittenStore(StateStore store, LongAccumulator written) {
    this.store = store;
    this.written = written;
  }

  UnsafeRow get(UnsafeRow key) {
    return store.get(key, StateStores.DEFAULT);
  }

  StateStoreIterator<UnsafeRowPair> iterator() {
    return store.iterator(StateStores.DEFAULT);
  }

  StateStoreIterator<UnsafeRowPair> prefixScan(UnsafeRow prefix) {
    return store.prefixScan(prefix, StateStores.DEFAULT);
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
