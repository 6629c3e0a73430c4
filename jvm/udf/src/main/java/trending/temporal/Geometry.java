package trending.temporal;

/**
 * Hopping windows {@code W(n) = [a + n*p, a + n*p + d)} (duration {@code d}, hop {@code p},
 * alignment {@code a} in {@code [0, p)}), and HoppingWindow2's snapping of a lifetime onto the
 * assignments {@code [end(n), end(n) + p)} of the windows it falls in:
 *
 * <pre>
 * s' = floor_to(s, a + d, p) + p       the first window end after s
 * e' = floor_to(e - 1, a, p) + p + d   the end of the last window starting before e, plus p
 * </pre>
 *
 * <p>{@code s' >= e'}: the event falls in no window. Snapped times are clamped to the timeline.
 */
public final class Geometry {
  final long duration;
  final long hop;
  final long alignment;

  public Geometry(long duration, long hop, long alignment) {
    this.duration = duration;
    this.hop = hop;
    this.alignment = Math.floorMod(alignment, hop);
  }

  /** {@code a + n*p}. */
  long start(long n) {
    return alignment + n * hop;
  }

  /** {@code a + n*p + d}. */
  long end(long n) {
    return start(n) + duration;
  }

  /** The smallest {@code n} with {@code end(n) > t}. */
  long firstEndingAfter(long t) {
    return Math.floorDiv(t - duration - alignment, hop) + 1;
  }

  /** The largest {@code n} with {@code end(n) <= t}. */
  long lastEndingBy(long t) {
    return Math.floorDiv(t - duration - alignment, hop);
  }

  /** The largest {@code n} with {@code start(n) < t}. */
  long lastStartingBefore(long t) {
    return Math.floorDiv(t - 1 - alignment, hop);
  }

  /** {@code floor_to(t, a + d, p) + p}, clamped. */
  long snapStart(long t) {
    if (t == Timeline.END_OF_TIME) {
      return t;
    }
    return Timeline.clamp(Timeline.floorTo(t, alignment + duration, hop) + hop);
  }

  /** {@code floor_to(t - 1, a, p) + p + d}, clamped. */
  long snapEnd(long t) {
    if (t == Timeline.END_OF_TIME) {
      return t;
    }
    return Timeline.clamp(Timeline.floorTo(t - 1, alignment, hop) + hop + duration);
  }
}
