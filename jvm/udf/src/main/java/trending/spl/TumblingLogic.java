package trending.spl;

/**
 * A running tumbling window: fills up, then flushes every tuple at once (SPL {@code
 * TumblingWindow}). Per partition, on {@code insert(x)}:
 *
 * <ul>
 *   <li>count(n): before_insert, after_insert, then if {@code |W| = n}: before_flush,
 *       after_flush (no flush if partition eviction just deleted the partition);
 *   <li>delta(a, s): if {@code a(x) - a(oldest) > s}: before_flush, after_flush; then the
 *       insertion;
 *   <li>time(p): the insertion only; at every clock instant {@code k * p} every partition
 *       flushes in creation order, or a made-up empty partition {@code null} once when the
 *       window is empty (unless {@code empty_window_events} is off);
 *   <li>punct(): the insertion only; a punctuation flushes every partition (creation order), or
 *       fires {@code empty_punct} when no partition holds a tuple.
 * </ul>
 *
 * <p>A flushed partition is deleted. The flush is the trigger (no {@code trigger} events); {@code
 * before_flush} carries the content, {@code after_flush} no tuples; the summaries, closed right
 * before {@code before_flush}, ride on both.
 */
final class TumblingLogic<R, K> extends WindowLogic<R, K> {
  private final long countSize;
  private final Policy.Delta delta;
  private final int deltaIndex;
  private final Policy.Time time;
  private final boolean punctuated;
  private final boolean keep;
  private final Summarizers<R> bound;
  private final Summaries emptySummaries;
  private double value;

  TumblingLogic(WindowConfig config, Attributes<R> reader) {
    super(config, reader);
    Policy evict = config.evict();
    countSize = evict instanceof Policy.Count c ? c.size() : 0;
    delta = evict instanceof Policy.Delta d ? d : null;
    deltaIndex = delta == null ? -1 : reader.index(delta.attribute());
    time = evict instanceof Policy.Time t ? t : null;
    punctuated = evict instanceof Policy.Punct;
    keep = config.keepTuples();
    bound = new Summarizers<>(summarizers, reader);
    emptySummaries = bound.isEmpty() ? null : bound.open();
  }

  @Override
  boolean keepsValues() {
    return false;
  }

  @Override
  double entryValue(R record) {
    return 0;
  }

  @Override
  void checkRecord(R record) {
    if (delta != null) {
      value = deltaValue(record, deltaIndex, delta);
    }
    bound.check(record);
  }

  @Override
  void onInsert(K key, R record, WindowEvents<R, K> out) {
    if (delta != null) {
      Partition<R, K> open = state.partitions.get(key);
      if (open != null && open.hasFirst && value - open.firstValue > delta.size()) {
        flush(key, open, out);
      }
    }
    Partition<R, K> part = state.partition(key, false);
    if (!insertEntry(key, part, record, 0, keep, out)) {
      return; // partition eviction deleted the partition just inserted into
    }
    if (delta != null && !part.hasFirst) {
      part.hasFirst = true;
      part.firstValue = value;
    }
    if (countSize > 0 && part.size >= countSize) {
      flush(key, part, out);
    }
  }

  @Override
  void onAdded(Partition<R, K> part, R record) {
    if (bound.isEmpty()) {
      return;
    }
    if (part.size == 0) {
      part.summaries = bound.open();
    }
    bound.add(part.summaries, record);
  }

  @Override
  void onPunct(WindowEvents<R, K> out) {
    if (!punctuated) {
      return;
    }
    if (state.isEmpty()) {
      emit(out, EventKind.EMPTY_PUNCT, null, Tuples.empty());
      return;
    }
    checkPartitionAge(out);
    flushAll(out);
  }

  @Override
  public long nextDue() {
    return time != null && firesNow() ? time.nextBoundary(state.nowMs) : NOTHING_DUE;
  }

  @Override
  void onTick(long timeMs, WindowEvents<R, K> out) {
    if (time == null || !time.isBoundary(timeMs)) {
      return;
    }
    checkPartitionAge(out);
    if (state.isEmpty() && emptyWindowEvents) {
      out.on(EventKind.BEFORE_FLUSH, null, Tuples.empty(), state.nowMs, emptySummaries);
      out.on(EventKind.AFTER_FLUSH, null, Tuples.empty(), state.nowMs, emptySummaries);
    }
    flushAll(out);
  }

  private void flushAll(WindowEvents<R, K> out) {
    Partition<R, K> part = state.firstCreated;
    while (part != null) {
      Partition<R, K> next = part.nextCreated;
      flush(part.key, part, out);
      part = next;
    }
  }

  /** {@code before_flush}, delete the partition, {@code after_flush}. */
  private void flush(K key, Partition<R, K> part, WindowEvents<R, K> out) {
    Summaries summary = part.summaries;
    out.on(EventKind.BEFORE_FLUSH, key, part.entries, state.nowMs, summary);
    state.remove(part);
    out.on(EventKind.AFTER_FLUSH, key, Tuples.empty(), state.nowMs, summary);
  }
}
