package trending.spl;

/**
 * Numbers as Python holds them: an integer ({@code long}) or a float ({@code double}), kept as
 * a flag and 64 bits (the {@code long}, or the {@code double}'s raw bits). Comparisons between
 * the two kinds are exact, as Python's are.
 */
final class Numbers {
  private static final double TWO_63 = 0x1p63;

  private Numbers() {}

  static long bits(double value) {
    return Double.doubleToRawLongBits(value);
  }

  static double real(long bits) {
    return Double.longBitsToDouble(bits);
  }

  /** The number as a double: a float's value, an integer rounded to nearest (Python's float()). */
  static double asDouble(boolean real, long bits) {
    return real ? real(bits) : (double) bits;
  }

  /** {@code a < b}, exactly, for any mix of integers and floats (false if either is NaN). */
  static boolean less(boolean aReal, long a, boolean bReal, long b) {
    if (!aReal && !bReal) {
      return a < b;
    }
    if (aReal && bReal) {
      return real(a) < real(b);
    }
    if (!aReal) {
      return integerBelow(a, real(b));
    }
    return integerAbove(b, real(a));
  }

  /** {@code i < d} exactly. */
  private static boolean integerBelow(long i, double d) {
    if (Double.isNaN(d)) {
      return false;
    }
    if (d >= TWO_63) {
      return true;
    }
    if (d < -TWO_63) {
      return false;
    }
    long floor = (long) Math.floor(d);
    return i < floor || (i == floor && d > Math.floor(d));
  }

  /** {@code i > d} exactly. */
  private static boolean integerAbove(long i, double d) {
    if (Double.isNaN(d)) {
      return false;
    }
    if (d >= TWO_63) {
      return false;
    }
    if (d < -TWO_63) {
      return true;
    }
    long ceil = (long) Math.ceil(d);
    return i > ceil || (i == ceil && d < Math.ceil(d));
  }

  /** The boxed value: a {@link Long} or a {@link Double}. */
  static Object box(boolean real, long bits) {
    return real ? (Object) real(bits) : (Object) bits;
  }
}
