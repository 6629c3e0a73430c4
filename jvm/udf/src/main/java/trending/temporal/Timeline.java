package trending.temporal;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * The temporal timeline: integer milliseconds between a finite beginning and end of time.
 * {@link #END_OF_TIME} (9999-12-31T23:59:59.999Z) stands for "never"; times from lifetime
 * arithmetic are clamped into {@code [BEGINNING_OF_TIME, END_OF_TIME]}.
 */
public final class Timeline {
  /** 0001-01-01T00:00:00.000Z. */
  public static final long BEGINNING_OF_TIME = -62_135_596_800_000L;
  /** 9999-12-31T23:59:59.999Z. */
  public static final long END_OF_TIME = 253_402_300_799_999L;
  /** The longest duration a spec may give the JVM core (2^52 ms, some 142,000 years). */
  public static final long LONGEST = 1L << 52;

  private Timeline() {}

  /** {@code t} moved into {@code [BEGINNING_OF_TIME, END_OF_TIME]}. */
  public static long clamp(long t) {
    return Math.min(Math.max(t, BEGINNING_OF_TIME), END_OF_TIME);
  }

  /** The largest {@code t' <= t} with {@code t' = alignment + n * period}. */
  public static long floorTo(long t, long alignment, long period) {
    return t - Math.floorMod(t - alignment, period);
  }

  /** ISO-8601 UTC with milliseconds, e.g. {@code 2012-03-15T12:00:05.000Z}. */
  public static String format(long millis) {
    LocalDateTime moment = LocalDateTime.ofInstant(Instant.ofEpochMilli(millis), ZoneOffset.UTC);
    return String.format("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", moment.getYear(),
        moment.getMonthValue(), moment.getDayOfMonth(), moment.getHour(), moment.getMinute(),
        moment.getSecond(), moment.getNano() / 1_000_000);
  }
}
