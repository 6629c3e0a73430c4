package trending.spl;

/**
 * Eviction and trigger policies of SPL windows: count, delta, time and punctuation.
 *
 * <p>Time is integer milliseconds on the window's clock, which starts at 0; time-based periods
 * are aligned to it (boundaries at {@code k * period}). Formulas ({@code W} a partition's window,
 * {@code x} the arriving tuple, {@code a(t)} the delta attribute, {@code s} a tuple's inserting
 * time):
 *
 * <ul>
 *   <li>{@link Count} {@code count(n)}: tumbling, flush when {@code |W| = n} after inserting;
 *       sliding eviction, {@code W} is the last {@code n} tuples; trigger every {@code n} tuples.
 *   <li>{@link Delta} {@code delta(a, size)}: tumbling, flush before {@code x} if {@code a(x) -
 *       a(oldest) > size}; sliding eviction, evict every {@code w} with {@code a(x) - a(w) >
 *       size}; trigger before {@code x} if {@code a(x) > a(ref) + size}, {@code x} the new ref.
 *   <li>{@link Time} {@code time(p)}: tumbling flush and sliding trigger at every {@code k * p}
 *       ({@code k >= 1}); sliding eviction of a tuple inserted at {@code s} at {@code s + p}.
 *   <li>{@link Punct} {@code punct()}: tumbling eviction only; a punctuation flushes.
 * </ul>
 */
public sealed interface Policy {

  /** {@code count(size)}: a window of {@code size} tuples, or a trigger every {@code size}. */
  record Count(long size) implements Policy {
    public Count {
      if (size < 1) {
        throw new IllegalArgumentException("count size must be a positive integer, got " + size);
      }
    }
  }

  /** {@code delta(attribute, size)}: a window spanning {@code size} units of an attribute. */
  record Delta(String attribute, double size) implements Policy {
    public Delta {
      if (attribute == null || attribute.isEmpty()) {
        throw new IllegalArgumentException("delta attribute must be a non-empty string");
      }
      if (!(size >= 0) || Double.isInfinite(size)) {
        throw new IllegalArgumentException("delta size must be a number >= 0, got " + size);
      }
    }
  }

  /** {@code time(period)}: a period of {@code periodMs} milliseconds on the window clock. */
  record Time(long periodMs) implements Policy {
    public Time {
      if (periodMs < 1) {
        throw new IllegalArgumentException("time period must be >= 1 ms, got " + periodMs);
      }
    }

    /** The first period boundary strictly after {@code nowMs}: {@code (now / p + 1) * p}. */
    public long nextBoundary(long nowMs) {
      return (Math.floorDiv(nowMs, periodMs) + 1) * periodMs;
    }

    /** Whether {@code timeMs} is a period boundary {@code k * p} with {@code k >= 1}. */
    public boolean isBoundary(long timeMs) {
      return timeMs > 0 && timeMs % periodMs == 0;
    }
  }

  /** {@code punct()}: a tumbling window that flushes when a punctuation arrives. */
  record Punct() implements Policy {}
}
