package trending.spl;

/**
 * Partition eviction: deleting whole partitions of a partitioned window to bound memory, with
 * SPL's LRU selection (partitions ordered least recently inserted-into first). The JVM core has
 * no operator-defined selection: a selector is Python code, so a spec asking for one is refused
 * ({@link SpecJson}).
 *
 * <ul>
 *   <li>{@link Limit#AGE} {@code partitionAge(ms)}: exceeded when the least recently used
 *       partition, last inserted into at {@code L}, has {@code L + age < now}; deletes every
 *       partition with {@code L + age <= now}. Checked before each insertion, before a
 *       punctuation flushes a non-empty window, and at each time trigger or flush tick.
 *   <li>{@link Limit#COUNT} {@code partitionCount(c)}: more than {@code c} partitions; deletes
 *       the oldest until there are {@code c}. Checked right after each {@code after_insert}.
 *   <li>{@link Limit#TUPLES} {@code tupleCount(t)}: more than {@code t} tuples in all; deletes
 *       the oldest partitions up to and including the first holding tuples, while over. Checked
 *       right after each {@code after_insert}.
 * </ul>
 */
public record PartitionEviction(Limit limit, long value) {
  /** The kind of limit. */
  public enum Limit {
    AGE,
    COUNT,
    TUPLES
  }

  public PartitionEviction {
    if (limit == null) {
      throw new IllegalArgumentException("a partition eviction needs a limit");
    }
    if (value < (limit == Limit.AGE ? 1 : 0)) {
      throw new IllegalArgumentException("partition eviction " + limit + " out of range: " + value);
    }
  }
}
