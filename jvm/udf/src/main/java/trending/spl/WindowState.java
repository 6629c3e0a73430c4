package trending.spl;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A whole window: its clock, insertion counter and partitions, in creation order and in LRU
 * order (two intrusive lists over the partitions, so creating, deleting and touching one are
 * O(1)), and the total number of tuples the partitions hold.
 *
 * <p>{@code dormant} holds the policy marks (trigger count, delta reference, {@code
 * initial_full}) of sliding partitions that time eviction emptied and removed: the SPL runtime
 * removes such a partition but keeps those marks, so the partition's next tuple resumes them.
 */
final class WindowState<R, K> {
  static final int VERSION = 1;

  long nowMs;
  long seq;
  long totalSize;
  final Map<K, Partition<R, K>> partitions = new HashMap<>();
  final Map<K, Partition<R, K>> dormant = new LinkedHashMap<>();
  Partition<R, K> firstCreated;
  Partition<R, K> lastCreated;
  Partition<R, K> leastUsed;
  Partition<R, K> mostUsed;

  boolean isEmpty() {
    return firstCreated == null;
  }

  /** The partition {@code key}, created if it does not exist (resuming dormant marks). */
  Partition<R, K> partition(K key, boolean withValues) {
    Partition<R, K> part = partitions.get(key);
    if (part != null) {
      return part;
    }
    part = dormant.remove(key);
    if (part == null) {
      part = new Partition<>(key, withValues);
    }
    part.key = key;
    add(part);
    return part;
  }

  /** Link {@code part} as the newest partition in both orders. */
  void add(Partition<R, K> part) {
    part.live = true;
    partitions.put(part.key, part);
    part.prevCreated = lastCreated;
    part.nextCreated = null;
    if (lastCreated == null) {
      firstCreated = part;
    } else {
      lastCreated.nextCreated = part;
    }
    lastCreated = part;
    part.prevUsed = null;
    part.nextUsed = null;
    linkUsed(part);
    totalSize += part.size;
  }

  /** {@code part} was just inserted into: it becomes the most recently used. */
  void touch(Partition<R, K> part) {
    if (mostUsed != part) {
      unlinkUsed(part);
      linkUsed(part);
    }
  }

  /** Delete {@code part}. */
  void remove(Partition<R, K> part) {
    partitions.remove(part.key);
    part.live = false;
    totalSize -= part.size;
    if (part.prevCreated == null) {
      firstCreated = part.nextCreated;
    } else {
      part.prevCreated.nextCreated = part.nextCreated;
    }
    if (part.nextCreated == null) {
      lastCreated = part.prevCreated;
    } else {
      part.nextCreated.prevCreated = part.prevCreated;
    }
    part.prevCreated = null;
    part.nextCreated = null;
    unlinkUsed(part);
  }

  /** Delete {@code part}, emptied by time eviction, keeping its marks for its next tuple. */
  void makeDormant(Partition<R, K> part) {
    part.entries.clear();
    remove(part);
    dormant.put(part.key, part);
  }

  /** The keys of the partitions in creation order. */
  List<K> keys() {
    List<K> keys = new ArrayList<>(partitions.size());
    for (Partition<R, K> p = firstCreated; p != null; p = p.nextCreated) {
      keys.add(p.key);
    }
    return keys;
  }

  private void linkUsed(Partition<R, K> part) {
    part.prevUsed = mostUsed;
    part.nextUsed = null;
    if (mostUsed == null) {
      leastUsed = part;
    } else {
      mostUsed.nextUsed = part;
    }
    mostUsed = part;
  }

  private void unlinkUsed(Partition<R, K> part) {
    if (part.prevUsed == null) {
      leastUsed = part.nextUsed;
    } else {
      part.prevUsed.nextUsed = part.nextUsed;
    }
    if (part.nextUsed == null) {
      mostUsed = part.prevUsed;
    } else {
      part.nextUsed.prevUsed = part.prevUsed;
    }
    part.prevUsed = null;
    part.nextUsed = null;
  }
}
