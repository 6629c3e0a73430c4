package trending.state;

import java.io.ByteArrayOutputStream;

/** Unsigned LEB128 varints, the encoding of the state values. */
final class Varints {
  private Varints() {}

  static void write(ByteArrayOutputStream out, long value) {
    while ((value & ~0x7FL) != 0) {
      out.write((int) ((value & 0x7F) | 0x80));
      value >>>= 7;
    }
    out.write((int) value);
  }

  /** {@code value} mapped so that small negative numbers stay short: 0, -1, 1, -2 ... */
  static long zigzag(long value) {
    return (value << 1) ^ (value >> 63);
  }

  /** The inverse of {@link #zigzag}. */
  static long unzigzag(long value) {
    return (value >>> 1) ^ -(value & 1);
  }

  /** The varint at {@code at[0]}, advancing it. */
  static long read(byte[] bytes, int[] at) {
    long value = 0;
    int shift = 0;
    while (true) {
      byte b = bytes[at[0]++];
      value |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return value;
      }
      shift += 7;
    }
  }
}
