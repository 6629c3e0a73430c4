package trending.temporal;

import java.time.DateTimeException;
import java.time.LocalDate;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Times of replay lines as Python's {@code parse_time_ms} reads them: epoch milliseconds (an
 * integer) or an ISO-8601 string (UTC without an offset; a trailing {@code Z} is UTC).
 *
 * <p>The ISO forms read are those of Python's {@code datetime.fromisoformat} with calendar
 * dates: {@code YYYY-MM-DD} or {@code YYYYMMDD}, optionally followed by any one separator
 * character and a time {@code HH}, {@code HH:MM}, {@code HH:MM:SS} or {@code HHMM}, {@code
 * HHMMSS}, with a fraction of a second ({@code .} or {@code ,}, digits past the sixth ignored)
 * and an offset ({@code Z}, any case, at the end) or {@code ±HH[:MM[:SS[.ffffff]]]}, {@code ±HHMM[SS]}. Week and
 * ordinal dates are not read.
 */
final class IsoTimes {
  private static final Pattern ISO = Pattern.compile(
      "(\\d{4})(?:-(\\d{2})-(\\d{2})|(\\d{2})(\\d{2}))"
          + "(?:.(\\d{2})(?::(\\d{2})(?::(\\d{2})(?:[.,](\\d+))?)?|(\\d{2})(?:(\\d{2})"
          + "(?:[.,](\\d+))?)?)?"
          + "(?:([+-])(\\d{2})(?::?(\\d{2})(?::?(\\d{2})(?:\\.(\\d{1,6}))?)?)?)?)?",
      Pattern.DOTALL);

  private IsoTimes() {}

  /** Epoch ms of a time field; {@link ReplayError} naming the field when it is no time. */
  static long parse(Object value, String name) {
    if (value instanceof Long millis) {
      return inRange(millis, value, name);
    }
    if (value instanceof String text) {
      return inRange(iso(text, name), value, name);
    }
    if (value instanceof java.math.BigInteger) {
      throw new ReplayError(name + ": time " + PythonText.repr(value)
          + " is outside years 1 to 9999");
    }
    throw new ReplayError(name + ": a time must be epoch milliseconds or ISO-8601, got "
        + PythonText.repr(value));
  }

  private static long inRange(long millis, Object value, String name) {
    if (millis < Timeline.BEGINNING_OF_TIME || millis > Timeline.END_OF_TIME) {
      throw new ReplayError(name + ": time " + PythonText.repr(value)
          + " is outside years 1 to 9999");
    }
    return millis;
  }

  private static long iso(String text, String name) {
    boolean utc = text.endsWith("Z") || text.endsWith("z");
    Matcher m = ISO.matcher(utc ? text.substring(0, text.length() - 1) + "+00:00" : text);
    if (!m.matches()) {
      throw new ReplayError(name + ": not an ISO-8601 time: " + PythonText.repr(text));
    }
    try {
      int year = Integer.parseInt(m.group(1));
      int month = Integer.parseInt(m.group(2) != null ? m.group(2) : m.group(4));
      int day = Integer.parseInt(m.group(3) != null ? m.group(3) : m.group(5));
      long days = LocalDate.of(year, month, day).toEpochDay();
      long micros = 0;
      if (m.group(6) != null) {
        boolean basic = m.group(10) != null;
        int hour = number(m.group(6), 23);
        int minute = number(basic ? m.group(10) : m.group(7), 59);
        int second = number(basic ? m.group(11) : m.group(8), 59);
        micros = ((hour * 60L + minute) * 60 + second) * 1_000_000
            + fraction(basic ? m.group(12) : m.group(9));
        micros -= offset(m);
      }
      long total = days * 86_400_000_000L + micros;
      if (total % 1000 != 0) {
        throw new ReplayError(name + ": time " + PythonText.repr(text)
            + " is not a whole number of milliseconds");
      }
      return total / 1000;
    } catch (DateTimeException e) {
      throw new ReplayError(name + ": not an ISO-8601 time: " + PythonText.repr(text));
    }
  }

  private static long offset(Matcher m) {
    if (m.group(13) == null) {
      return 0;
    }
    long micros = ((number(m.group(14), 23) * 60L + number(m.group(15), 59)) * 60
        + number(m.group(16), 59)) * 1_000_000 + fraction(m.group(17));
    return m.group(13).equals("-") ? -micros : micros;
  }

  private static int number(String digits, int most) {
    int value = digits == null ? 0 : Integer.parseInt(digits);
    if (value > most) {
      throw new DateTimeException("out of range");
    }
    return value;
  }

  private static long fraction(String digits) {
    if (digits == null) {
      return 0;
    }
    String six = (digits + "00000").substring(0, 6);
    return Long.parseLong(six);
  }
}
