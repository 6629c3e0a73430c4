package trending.spl;

import java.util.List;

/**
 * The running state machine of a window: what tumbling and sliding windows share (the clock,
 * partitions, inputs, partition eviction and the state encoding); {@link TumblingLogic} and
 * {@link SlidingLogic} add the policies' rules.
 *
 * <p>Three verbs, each delivering the events it fires to a {@link WindowEvents}, in SPL's order:
 *
 * <ul>
 *   <li>{@link #insert} a tuple into a partition at the current clock time;
 *   <li>{@link #punct} a window punctuation;
 *   <li>{@link #advanceTo} move the clock, firing every time-based event due up to and including
 *       the new time, in time order (at one instant: time triggers and flushes, then tuple
 *       evictions).
 * </ul>
 *
 * <p>A non-partitioned window is one whose only partition key is {@code null}. A partition
 * eviction is checked right after each {@code after_insert} (the age limit: before an insertion,
 * a flushing punctuation and each time tick). A time trigger or tumbling time flush that finds
 * the whole window empty fires once for a made-up empty partition {@code null}, unless {@code
 * empty_window_events} is off (then an empty window has nothing due at all). {@link #encode}
 * writes the whole state; {@link WindowConfig#restore} continues from it with identical events.
 * An {@link InputError} leaves the window unchanged.
 */
public abstract class WindowLogic<R, K> {
  /** What {@link #nextDue} returns when nothing is due. */
  public static final long NOTHING_DUE = -1;

  final WindowConfig config;
  final Attributes<R> reader;
  final WindowState<R, K> state = new WindowState<>();
  final One<R> one = new One<>();
  final Summarizer[] summarizers;
  private final PartitionEviction eviction;
  private final boolean ageLimit;
  final boolean emptyWindowEvents;

  WindowLogic(WindowConfig config, Attributes<R> reader) {
    this.config = config;
    this.reader = reader;
    eviction = config.partitionEviction();
    ageLimit = eviction != null && eviction.limit() == PartitionEviction.Limit.AGE;
    emptyWindowEvents = config.emptyWindowEvents();
    summarizers = config.summarizers().toArray(new Summarizer[0]);
  }

  /** The window clock, in milliseconds. */
  public final long nowMs() {
    return state.nowMs;
  }

  /** Insert {@code record} into {@code partition} ({@code null}: not partitioned). */
  public final void insert(R record, K partition, WindowEvents<R, K> out) {
    checkRecord(record);
    checkPartitionAge(out);
    onInsert(partition, record, out);
  }

  /** Insert a window punctuation (ignored unless the window evicts on punctuation). */
  public final void punct(WindowEvents<R, K> out) {
    onPunct(out);
  }

  /** Move the clock to {@code timeMs}, firing the time-based events due until then. */
  public final void advanceTo(long timeMs, WindowEvents<R, K> out) {
    if (timeMs < state.nowMs) {
      throw new InputError(
          "the clock cannot go back from " + state.nowMs + " to " + timeMs + " ms");
    }
    long due;
    while ((due = nextDue()) != NOTHING_DUE && due <= timeMs) {
      state.nowMs = Math.max(due, state.nowMs);
      onTick(state.nowMs, out);
    }
    state.nowMs = timeMs;
  }

  /** The next clock instant at which a time policy has something due, or {@link #NOTHING_DUE}. */
  public abstract long nextDue();

  /** The keys of the existing partitions, in creation order. */
  public final List<K> partitions() {
    return state.keys();
  }

  /** The tuples kept in {@code partition}, oldest first (a view; empty if no such partition). */
  public final Tuples<R> content(K partition) {
    Partition<R, K> part = state.partitions.get(partition);
    return part == null ? Tuples.empty() : part.entries;
  }

  /** The total number of tuples the partitions hold (kept or, without keep_tuples, counted). */
  public final long tupleCount() {
    return state.totalSize;
  }

  /** The whole state as bytes (see {@link StateCodec}). */
  public final byte[] encode(Codec<R> records, Codec<K> keys) {
    return StateCodec.encode(this, records, keys);
  }

  // -- shared steps ----------------------------------------------------------------------

  final void emit(WindowEvents<R, K> out, EventKind kind, K key, Tuples<R> tuples) {
    out.on(kind, key, tuples, state.nowMs, null);
  }

  /**
   * {@code before_insert}, add the tuple (and summarize it), {@code after_insert}, then check
   * partition eviction; {@code false} if that check deleted the partition.
   */
  final boolean insertEntry(
      K key, Partition<R, K> part, R record, double value, boolean keep, WindowEvents<R, K> out) {
    long now = state.nowMs;
    out.on(EventKind.BEFORE_INSERT, key, one.of(record), now, null);
    onAdded(part, record);
    if (keep) {
      part.entries.append(now, record, value);
    }
    part.size++;
    state.totalSize++;
    part.lastSeq = ++state.seq;
    part.lastInsertMs = now;
    state.touch(part);
    out.on(EventKind.AFTER_INSERT, key, one.of(record), now, null);
    if (eviction == null || ageLimit) {
      return true;
    }
    PartitionEvictor.evict(state, eviction, out);
    return part.live;
  }

  /** The age limit's check: before an insertion, a flushing punctuation or a tick. */
  final void checkPartitionAge(WindowEvents<R, K> out) {
    if (ageLimit) {
      PartitionEvictor.evict(state, eviction, out);
    }
  }

  /** Whether a time trigger or flush tick has something to fire on (see the class doc). */
  final boolean firesNow() {
    return emptyWindowEvents || !state.isEmpty();
  }

  /** The delta attribute of {@code record}; {@link InputError} if missing or not a number. */
  final double deltaValue(R record, int index, Policy.Delta policy) {
    double value;
    switch (reader.kind(record, index)) {
      case Attributes.INTEGER -> value = reader.integer(record, index);
      case Attributes.REAL -> value = reader.real(record, index);
      case Attributes.ABSENT -> throw new InputError(
          "tuple has no attribute '" + policy.attribute() + "' needed by " + describe(policy));
      default -> value = Double.NaN;
    }
    if (!Double.isFinite(value)) {
      throw new InputError(
          "attribute '" + policy.attribute() + "' must be a number for " + describe(policy));
    }
    return value;
  }

  private static String describe(Policy.Delta policy) {
    return "delta(" + policy.attribute() + ", " + policy.size() + ")";
  }

  // -- the policies' rules ---------------------------------------------------------------

  /** Whether the entries keep each tuple's delta eviction value beside it. */
  abstract boolean keepsValues();

  /** The value kept beside {@code record} (its delta eviction attribute), when kept. */
  abstract double entryValue(R record);

  /** Hook between {@code before_insert} and {@code after_insert} (tumbling summarizers). */
  abstract void onAdded(Partition<R, K> part, R record);

  /** {@link InputError} if the policies cannot take {@code record} (keeping its values). */
  abstract void checkRecord(R record);

  abstract void onInsert(K key, R record, WindowEvents<R, K> out);

  abstract void onPunct(WindowEvents<R, K> out);

  /** Fire the time-based events due at {@code timeMs} (the clock is already there). */
  abstract void onTick(long timeMs, WindowEvents<R, K> out);
}
