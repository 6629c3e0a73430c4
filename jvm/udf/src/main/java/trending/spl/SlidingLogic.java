package trending.spl;

/**
 * A running sliding window: evicts the oldest tuples as new ones arrive (SPL {@code
 * SlidingWindow}). Order per eviction (rows) and trigger (columns), per partition; {@code |}
 * separates steps that happen on the clock:
 *
 * <pre>
 * evict   count(n) trigger          delta trigger             time trigger
 * count   evict, insert, trigger    trigger, evict, insert    evict, insert | trigger
 * delta   evict, insert, trigger    trigger, evict, insert    evict, insert | trigger
 * time    insert, trigger | evict   trigger, insert | evict   insert | evict | trigger
 * </pre>
 *
 * <p>Delta: {@code x} is beyond {@code w} when {@code a(x) - a(w) > size}; delta eviction evicts
 * every such {@code w}; a delta trigger compares {@code x} with the tuple of the last trigger
 * (before any, the partition's first tuple), and the triggering tuple becomes the reference.
 * {@code initial_full} fires once per partition: count(n) eviction right after the insertion that
 * makes {@code |W| = n}; delta eviction right before its first eviction; time eviction right
 * before the partition's first {@code before_insert}. Time eviction deletes a partition it
 * empties but keeps its trigger count, delta reference and {@code initial_full} mark for its
 * next tuple. A sliding window ignores punctuation.
 */
final class SlidingLogic<R, K> extends WindowLogic<R, K> {
  private final long countEvict;
  private final Policy.Delta deltaEvict;
  private final int deltaEvictIndex;
  private final Policy.Time timeEvict;
  private final long countTrigger;
  private final Policy.Delta deltaTrigger;
  private final int deltaTriggerIndex;
  private final Policy.Time timeTrigger;
  private double evictValue;
  private double triggerValue;
  private Object[] victims = new Object[16];

  SlidingLogic(WindowConfig config, Attributes<R> reader) {
    super(config, reader);
    Policy evict = config.evict();
    Policy trigger = config.trigger();
    countEvict = evict instanceof Policy.Count c ? c.size() : 0;
    deltaEvict = evict instanceof Policy.Delta d ? d : null;
    deltaEvictIndex = deltaEvict == null ? -1 : reader.index(deltaEvict.attribute());
    timeEvict = evict instanceof Policy.Time t ? t : null;
    countTrigger = trigger instanceof Policy.Count c ? c.size() : 0;
    deltaTrigger = trigger instanceof Policy.Delta d ? d : null;
    deltaTriggerIndex = deltaTrigger == null ? -1 : reader.index(deltaTrigger.attribute());
    timeTrigger = trigger instanceof Policy.Time t ? t : null;
  }

  @Override
  boolean keepsValues() {
    return deltaEvict != null;
  }

  @Override
  double entryValue(R record) {
    return deltaValue(record, deltaEvictIndex, deltaEvict);
  }

  @Override
  void checkRecord(R record) {
    if (deltaEvict != null) {
      evictValue = deltaValue(record, deltaEvictIndex, deltaEvict);
    }
    if (deltaTrigger != null) {
      triggerValue = deltaValue(record, deltaTriggerIndex, deltaTrigger);
    }
  }

  @Override
  void onInsert(K key, R record, WindowEvents<R, K> out) {
    Partition<R, K> part = state.partition(key, deltaEvict != null);
    if (deltaTrigger != null) {
      deltaTrigger(key, part, out);
    }
    if (countEvict > 0) {
      while (part.size >= countEvict) {
        evictOldest(key, part, out);
      }
    } else if (deltaEvict != null) {
      deltaEvict(key, part, out);
    } else {
      initialFull(key, part, out); // time eviction: full from the start
    }
    if (!insertEntry(key, part, record, evictValue, true, out)) {
      return; // partition eviction deleted this very partition
    }
    if (deltaEvict != null) {
      part.minValue = Math.min(part.minValue, evictValue);
    }
    if (countEvict > 0 && part.size >= countEvict && !part.full) {
      initialFull(key, part, out);
    }
    if (countTrigger > 0 && ++part.sinceTrigger >= countTrigger) {
      part.sinceTrigger = 0;
      trigger(key, part, out);
    }
  }

  /** Trigger before {@code x} goes in if {@code a(x) - a(ref) > size}; {@code x} becomes ref. */
  private void deltaTrigger(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    if (!part.hasRef) {
      part.hasRef = true;
      part.triggerRef = triggerValue;
    } else if (triggerValue - part.triggerRef > deltaTrigger.size()) {
      part.triggerRef = triggerValue;
      trigger(key, part, out);
    }
  }

  private void evictOldest(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    R oldest = part.entries.oldest();
    emit(out, EventKind.BEFORE_EVICT, key, one.of(oldest));
    part.entries.popOldest();
    part.size--;
    state.totalSize--;
    emit(out, EventKind.AFTER_EVICT, key, one.of(oldest));
  }

  /**
   * Evict every tuple {@code w} with {@code a(x) - a(w) > size} ({@code initial_full} first);
   * there is one exactly when {@code a(x) - min(a(w)) > size}, so most insertions scan nothing.
   */
  @SuppressWarnings("unchecked")
  private void deltaEvict(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    if (part.entries.isEmpty() || !(evictValue - part.minValue > deltaEvict.size())) {
      return;
    }
    initialFull(key, part, out);
    if (victims.length < part.entries.size()) {
      victims = new Object[Math.max(part.entries.size(), victims.length * 2)];
    }
    int gone = part.entries.removeBeyond(evictValue, deltaEvict.size(), victims);
    part.minValue = part.entries.minValue();
    for (int i = 0; i < gone; i++) {
      R victim = (R) victims[i];
      victims[i] = null;
      emit(out, EventKind.BEFORE_EVICT, key, one.of(victim));
      part.size--;
      state.totalSize--;
      emit(out, EventKind.AFTER_EVICT, key, one.of(victim));
    }
  }

  private void initialFull(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    if (!part.full) {
      part.full = true;
      emit(out, EventKind.INITIAL_FULL, key, part.entries);
    }
  }

  private void trigger(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    emit(out, EventKind.TRIGGER, key, part.entries);
  }

  @Override
  void onAdded(Partition<R, K> part, R record) {
    // sliding windows have no summarizers
  }

  @Override
  void onPunct(WindowEvents<R, K> out) {
    // sliding windows ignore punctuation
  }

  @Override
  public long nextDue() {
    long due = NOTHING_DUE;
    if (timeEvict != null) {
      for (Partition<R, K> p = state.firstCreated; p != null; p = p.nextCreated) {
        if (!p.entries.isEmpty()) {
          due = earliest(due, p.entries.oldestTime() + timeEvict.periodMs());
        }
      }
    }
    if (timeTrigger != null && firesNow()) {
      due = earliest(due, timeTrigger.nextBoundary(state.nowMs));
    }
    return due;
  }

  private static long earliest(long due, long at) {
    return due == NOTHING_DUE ? at : Math.min(due, at);
  }

  @Override
  void onTick(long timeMs, WindowEvents<R, K> out) {
    if (timeTrigger != null && timeTrigger.isBoundary(timeMs)) {
      timeTrigger(out);
    }
    if (timeEvict != null) {
      timeEvict(timeMs, out);
    }
  }

  /** A trigger tick: the age check, then a trigger per partition (or the empty one). */
  private void timeTrigger(WindowEvents<R, K> out) {
    checkPartitionAge(out);
    if (state.isEmpty() && emptyWindowEvents) {
      emit(out, EventKind.TRIGGER, null, Tuples.empty());
    }
    for (Partition<R, K> p = state.firstCreated; p != null; p = p.nextCreated) {
      trigger(p.key, p, out);
    }
  }

  /**
   * Evict the tuples inserted at or before {@code timeMs - period}; emptied partitions go
   * dormant (deleted, their trigger marks kept).
   */
  private void timeEvict(long timeMs, WindowEvents<R, K> out) {
    long period = timeEvict.periodMs();
    Partition<R, K> part = state.firstCreated;
    while (part != null) {
      Partition<R, K> next = part.nextCreated;
      while (!part.entries.isEmpty() && part.entries.oldestTime() + period <= timeMs) {
        evictOldest(part.key, part, out);
      }
      if (part.size == 0) {
        state.makeDormant(part);
      }
      part = next;
    }
  }
}
