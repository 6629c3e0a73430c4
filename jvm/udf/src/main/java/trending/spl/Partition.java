package trending.spl;

/**
 * One partition's sub-window and the per-partition state of its policies.
 *
 * <p>{@code size} counts the tuples of the open window even when a tumbling window does not keep
 * them ({@code entries} is then empty). {@code firstValue} is the delta attribute of the oldest
 * tuple of a tumbling delta window; {@code sinceTrigger} and {@code triggerRef} are the count
 * and delta trigger state; {@code full} says {@code initial_full} has fired; {@code
 * lastInsertMs} and {@code lastSeq} order partitions for LRU and partition age. {@code
 * minValue} is the smallest delta eviction value kept (sliding delta eviction only).
 *
 * <p>{@code key} is the key the partition was created under. A partition is linked into two
 * lists of its {@link WindowState}: creation order and LRU order (least recently inserted-into
 * first).
 */
final class Partition<R, K> {
  K key;
  final Entries<R> entries;
  long size;
  boolean hasFirst;
  double firstValue;
  long sinceTrigger;
  boolean hasRef;
  double triggerRef;
  boolean full;
  long lastInsertMs;
  long lastSeq;
  Summaries summaries;
  double minValue = Double.POSITIVE_INFINITY;
  boolean live;

  Partition<R, K> prevCreated;
  Partition<R, K> nextCreated;
  Partition<R, K> prevUsed;
  Partition<R, K> nextUsed;

  Partition(K key, boolean withValues) {
    this.key = key;
    entries = new Entries<>(withValues);
  }
}
