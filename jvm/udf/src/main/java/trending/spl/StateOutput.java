package trending.spl;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** A growing byte buffer for the state encoding: varints, fixed longs, strings, bytes. */
public final class StateOutput {
  private byte[] bytes = new byte[64];
  private int size;

  public void writeByte(int value) {
    ensure(1);
    bytes[size++] = (byte) value;
  }

  public void writeBoolean(boolean value) {
    writeByte(value ? 1 : 0);
  }

  /** Unsigned LEB128. */
  public void writeVarLong(long value) {
    ensure(10);
    while ((value & ~0x7FL) != 0) {
      bytes[size++] = (byte) ((value & 0x7F) | 0x80);
      value >>>= 7;
    }
    bytes[size++] = (byte) value;
  }

  /** A signed value, zigzag-mapped so that small negative numbers stay short. */
  public void writeZigZag(long value) {
    writeVarLong((value << 1) ^ (value >> 63));
  }

  public void writeLong(long value) {
    ensure(8);
    for (int shift = 56; shift >= 0; shift -= 8) {
      bytes[size++] = (byte) (value >>> shift);
    }
  }

  public void writeDouble(double value) {
    writeLong(Double.doubleToRawLongBits(value));
  }

  /** Length-prefixed bytes. */
  public void writeBytes(byte[] value) {
    writeVarLong(value.length);
    ensure(value.length);
    System.arraycopy(value, 0, bytes, size, value.length);
    size += value.length;
  }

  /** Length-prefixed UTF-8. */
  public void writeString(String value) {
    writeBytes(value.getBytes(StandardCharsets.UTF_8));
  }

  public byte[] toByteArray() {
    return Arrays.copyOf(bytes, size);
  }

  private void ensure(int more) {
    if (size + more > bytes.length) {
      bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
    }
  }
}
