package trending.temporal;

/**
 * Lifetime alteration (StreamInsight's AlterEventLifetime). For an event {@code [s, e)} and a
 * CTI {@code c}:
 *
 * <pre>
 * s' = s + shift                      c' = c + shift
 * e' = s' + duration                  if a fixed duration is given, else
 * e' = e + shift + extend
 * e' = min(e', s' + clip)             if a clip is given
 * </pre>
 *
 * <p>Results are clamped to the timeline; the end of time stays the end of time. Every length
 * is at most {@link Timeline#LONGEST} in magnitude, so no sum here overflows.
 */
public final class Alteration {
  /** No alteration. */
  public static final Alteration UNCHANGED = new Alteration(0, null, 0, null);

  private final long shift;
  private final Long duration;
  private final long extend;
  private final Long clip;

  public Alteration(long shift, Long duration, long extend, Long clip) {
    this.shift = shift;
    this.duration = duration;
    this.extend = extend;
    this.clip = clip;
  }

  public long shift() {
    return shift;
  }

  /** Every event gets a known end at its start, so end edges are ignored. */
  public boolean fixed() {
    return duration != null;
  }

  /** {@code s' = s + shift}. */
  public long start(long start) {
    return shifted(start);
  }

  /** {@code c' = c + shift}. */
  public long cti(long cti) {
    return shifted(cti);
  }

  /** The latest end of an event starting (altered) at {@code start}. */
  public long cap(long start) {
    if (duration != null) {
      return limit(Timeline.clamp(start + duration), start);
    }
    return limit(Timeline.END_OF_TIME, start);
  }

  /** {@code e'} of an event with altered start {@code start} and original end {@code end}. */
  public long end(long start, long end) {
    if (duration != null) {
      return cap(start);
    }
    long moved = end == Timeline.END_OF_TIME
        ? Timeline.END_OF_TIME : Timeline.clamp(end + shift + extend);
    return limit(moved, start);
  }

  private long limit(long end, long start) {
    return clip == null ? end : Math.min(end, Timeline.clamp(start + clip));
  }

  private long shifted(long t) {
    return t == Timeline.END_OF_TIME ? Timeline.END_OF_TIME : Timeline.clamp(t + shift);
  }
}
