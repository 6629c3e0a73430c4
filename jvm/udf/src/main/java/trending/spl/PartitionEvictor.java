package trending.spl;

/**
 * Deletes partitions while a {@link PartitionEviction} limit is exceeded, with LRU selection:
 * each round fires {@code partition_evict} per chosen partition (least recently used first, with
 * its content) and deletes it. A deleted partition that receives tuples later starts afresh.
 * Every round costs O(partitions deleted): the LRU order is a list kept by {@link WindowState}.
 */
final class PartitionEvictor {
  private PartitionEvictor() {}

  static <R, K> void evict(
      WindowState<R, K> state, PartitionEviction policy, WindowEvents<R, K> out) {
    long value = policy.value();
    switch (policy.limit()) {
      case AGE -> {
        // exceeded: L(least used) + age < now; then every partition with L + age <= now goes
        if (state.isEmpty() || state.leastUsed.lastInsertMs + value >= state.nowMs) {
          return;
        }
        while (state.leastUsed != null && state.leastUsed.lastInsertMs + value <= state.nowMs) {
          delete(state, state.leastUsed, out);
        }
      }
      case COUNT -> {
        while (state.partitions.size() > value) {
          delete(state, state.leastUsed, out);
        }
      }
      case TUPLES -> {
        // each round: the least used partitions up to and including the first holding tuples
        while (!state.isEmpty() && state.totalSize > value) {
          boolean held;
          do {
            held = state.leastUsed.size > 0;
            delete(state, state.leastUsed, out);
          } while (!held && state.leastUsed != null);
        }
      }
    }
  }

  private static <R, K> void delete(
      WindowState<R, K> state, Partition<R, K> part, WindowEvents<R, K> out) {
    out.on(EventKind.PARTITION_EVICT, part.key, part.entries, state.nowMs, null);
    state.remove(part);
  }
}
