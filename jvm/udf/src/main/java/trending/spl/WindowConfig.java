package trending.spl;

import java.util.List;

/**
 * A window's configuration: its kind, policies, partitioning attribute, partition eviction,
 * summarizers and flags, checked as the Python core checks them. {@link #build} makes a running
 * window, {@link #restore} one that continues from an encoded state. Read one from the spec's
 * normal form with {@link SpecJson#read}.
 *
 * <p>A sliding window's {@code trigger} defaults to {@code count(1)} (a trigger after every
 * insertion) and it cannot evict or trigger on punctuation; summarizers and {@code keepTuples =
 * false} are for tumbling windows only.
 */
public record WindowConfig(
    Kind kind,
    Policy evict,
    Policy trigger,
    String partitionBy,
    PartitionEviction partitionEviction,
    List<Summarizer> summarizers,
    boolean keepTuples,
    boolean emptyWindowEvents) {

  /** Tumbling or sliding. */
  public enum Kind {
    TUMBLING,
    SLIDING
  }

  public WindowConfig {
    if (kind == null || evict == null) {
      throw new IllegalArgumentException("a window needs a kind and an eviction policy");
    }
    summarizers = List.copyOf(summarizers == null ? List.of() : summarizers);
    if (kind == Kind.SLIDING) {
      trigger = trigger == null ? new Policy.Count(1) : trigger;
      if (evict instanceof Policy.Punct || trigger instanceof Policy.Punct) {
        throw new IllegalArgumentException(
            "a sliding window cannot evict or trigger on punctuation (only tumbling windows can)");
      }
      if (!summarizers.isEmpty() || !keepTuples) {
        throw new IllegalArgumentException("summaries and keep_tuples are for tumbling windows");
      }
    } else if (trigger != null) {
      throw new IllegalArgumentException("a tumbling window has no trigger policy");
    }
    if (partitionEviction != null && partitionBy == null) {
      throw new IllegalArgumentException(
          "partition_eviction needs partition_by (only partitioned windows evict partitions)");
    }
  }

  /** A running window, empty at clock 0, reading its tuples through {@code reader}. */
  public <R, K> WindowLogic<R, K> build(Attributes<R> reader) {
    return kind == Kind.SLIDING
        ? new SlidingLogic<>(this, reader)
        : new TumblingLogic<>(this, reader);
  }

  /** A running window continuing from {@code state}, a {@link WindowLogic#encode} result. */
  public <R, K> WindowLogic<R, K> restore(
      Attributes<R> reader, byte[] state, Codec<R> records, Codec<K> keys) {
    WindowLogic<R, K> logic = build(reader);
    StateCodec.decode(logic, state, records, keys);
    return logic;
  }
}
