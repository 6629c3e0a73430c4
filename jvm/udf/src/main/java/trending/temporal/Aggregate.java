package trending.temporal;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * A window aggregate over the values of the events in a window, their lifetimes clipped to the
 * window ({@code lengths}) and the window's length ({@code span}). The time-weighted average is
 * StreamInsight's: {@code sum(value * clipped_length) / span}. Results are as Python computes
 * them ({@link Numbers}): count a {@link Long}; sum, min and max integers or floats; the
 * averages floats; top_k the {@code k} largest values, largest first (equal ones in input
 * order).
 */
public final class Aggregate {
  /** The aggregates, by the names of the spec. */
  public enum Kind {
    COUNT,
    SUM,
    MIN,
    MAX,
    AVERAGE,
    TOP_K,
    TIME_WEIGHTED_AVERAGE;

    public String json() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  final Kind kind;
  final long k;

  public Aggregate(Kind kind, long k) {
    this.kind = kind;
    this.k = k;
  }

  /** Depends on clipped lifetimes, not only on which events are in the window. */
  boolean timeSensitive() {
    return kind == Kind.TIME_WEIGHTED_AVERAGE;
  }

  /** {@link TemporalInputError} unless this aggregate can take {@code value}. */
  void check(Object value) {
    if (kind != Kind.COUNT && !Numbers.isNumber(value)) {
      throw new TemporalInputError(
          kind.json() + " needs a numeric value, got " + PythonText.repr(value));
    }
  }

  /** The aggregate of a non-empty window of length {@code span}. */
  Object apply(List<Object> values, long[] lengths, long span) {
    return switch (kind) {
      case COUNT -> (long) values.size();
      case SUM -> Numbers.sum(values);
      case MIN -> extreme(values, true);
      case MAX -> extreme(values, false);
      case AVERAGE -> Numbers.divide(Numbers.sum(values), values.size());
      case TOP_K -> top(values);
      case TIME_WEIGHTED_AVERAGE -> Numbers.divide(weighted(values, lengths), span);
    };
  }

  /** Python's {@code min}/{@code max}: the first value no later one is strictly beyond. */
  private static Object extreme(List<Object> values, boolean lowest) {
    Object best = values.get(0);
    for (int i = 1; i < values.size(); i++) {
      Object value = values.get(i);
      if (lowest ? Numbers.less(value, best) : Numbers.less(best, value)) {
        best = value;
      }
    }
    return best;
  }

  private List<Object> top(List<Object> values) {
    List<Object> sorted = new ArrayList<>(values);
    sorted.sort((a, b) -> Numbers.less(b, a) ? -1 : (Numbers.less(a, b) ? 1 : 0));
    return new ArrayList<>(sorted.subList(0, (int) Math.min(k, sorted.size())));
  }

  private static Object weighted(List<Object> values, long[] lengths) {
    Object total = 0L;
    for (int i = 0; i < values.size(); i++) {
      total = Numbers.add(total, Numbers.multiply(values.get(i), lengths[i]));
    }
    return total;
  }
}
