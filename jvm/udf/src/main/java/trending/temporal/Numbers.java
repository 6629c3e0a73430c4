package trending.temporal;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;

/**
 * Numbers as Python holds them: an integer ({@link Long}, or {@link BigInteger} beyond a long)
 * or a float ({@link Double}). Integers add and multiply exactly; an integer meeting a float
 * becomes the nearest float; integer division is correctly rounded; comparisons between the
 * kinds are exact. {@link #sum} adds left to right, as Python's {@code sum()} does up to 3.11.
 */
final class Numbers {
  private static final long SAFE = 1L << 53;

  private Numbers() {}

  static boolean isNumber(Object value) {
    return value instanceof Long || value instanceof Double || value instanceof BigInteger;
  }

  private static boolean isInteger(Object value) {
    return value instanceof Long || value instanceof BigInteger;
  }

  /** An integer as a {@link Long} when it fits one. */
  static Object normal(BigInteger value) {
    return value.bitLength() < 64 ? (Object) value.longValue() : value;
  }

  private static BigInteger big(Object integer) {
    return integer instanceof Long l ? BigInteger.valueOf(l) : (BigInteger) integer;
  }

  /** Python's {@code float(x)}: an integer rounded to the nearest double. */
  static double toDouble(Object number) {
    if (number instanceof Double d) {
      return d;
    }
    if (number instanceof Long l) {
      return (double) l;
    }
    return ((BigInteger) number).doubleValue();
  }

  /** {@code a + b}. */
  static Object add(Object a, Object b) {
    if (a instanceof Long x && b instanceof Long y) {
      long s = x + y;
      return ((x ^ s) & (y ^ s)) < 0 ? normal(big(x).add(big(y))) : (Object) s;
    }
    if (isInteger(a) && isInteger(b)) {
      return normal(big(a).add(big(b)));
    }
    return toDouble(a) + toDouble(b);
  }

  /** {@code value * length}. */
  static Object multiply(Object value, long length) {
    if (value instanceof Double d) {
      return d * (double) length;
    }
    if (value instanceof Long l) {
      long high = Math.multiplyHigh(l, length);
      long low = l * length;
      if ((high == 0 && low >= 0) || (high == -1 && low < 0)) {
        return low;
      }
    }
    return normal(big(value).multiply(BigInteger.valueOf(length)));
  }

  /** {@code sum(values)}: from the integer 0, left to right. */
  static Object sum(List<Object> values) {
    Object total = 0L;
    for (Object value : values) {
      total = add(total, value);
    }
    return total;
  }

  /** {@code a / b} (true division) for a positive integer {@code b}. */
  static double divide(Object a, long b) {
    if (a instanceof Double d) {
      return d / (double) b;
    }
    if (a instanceof Long l && Math.abs(l) <= SAFE && b <= SAFE) {
      return (double) l / (double) b;
    }
    return divideExactly(big(a), BigInteger.valueOf(b));
  }

  /** {@code a / b} rounded once to the nearest double (ties to even), for {@code b > 0}. */
  private static double divideExactly(BigInteger a, BigInteger b) {
    if (a.signum() == 0) {
      return 0.0;
    }
    BigInteger magnitude = a.abs();
    int shift = 55 + b.bitLength() - magnitude.bitLength();
    BigInteger num = shift >= 0 ? magnitude.shiftLeft(shift) : magnitude;
    BigInteger den = shift >= 0 ? b : b.shiftLeft(-shift);
    BigInteger[] qr = num.divideAndRemainder(den);
    long q = qr[0].longValueExact() | (qr[1].signum() != 0 ? 1 : 0);
    double result = Math.scalb((double) q, -shift);
    return a.signum() < 0 ? -result : result;
  }

  /** {@code a < b}, exactly, for any mix of integers and floats (false if either is NaN). */
  static boolean less(Object a, Object b) {
    if (a instanceof Double x && b instanceof Double y) {
      return x < y;
    }
    if (a instanceof Double x) {
      return !x.isNaN() && compareMixed(b, x) > 0;
    }
    if (b instanceof Double y) {
      return !y.isNaN() && compareMixed(a, y) < 0;
    }
    if (a instanceof Long x && b instanceof Long y) {
      return x < y;
    }
    return big(a).compareTo(big(b)) < 0;
  }

  /** The sign of {@code integer - d} for a {@code d} that is not NaN. */
  private static int compareMixed(Object integer, double d) {
    if (Double.isInfinite(d)) {
      return d > 0 ? -1 : 1;
    }
    if (integer instanceof Long l && Math.abs(l) <= SAFE) {
      double x = (double) l;
      return x < d ? -1 : (x > d ? 1 : 0);
    }
    return new BigDecimal(big(integer)).compareTo(new BigDecimal(d));
  }
}
