package trending.spl;

import java.nio.charset.StandardCharsets;

/** Reads what {@link StateOutput} wrote; {@link IllegalArgumentException} past the end. */
public final class StateInput {
  private final byte[] bytes;
  private int at;

  public StateInput(byte[] bytes) {
    this.bytes = bytes;
  }

  public int readByte() {
    need(1);
    return bytes[at++] & 0xFF;
  }

  public boolean readBoolean() {
    return readByte() != 0;
  }

  public long readVarLong() {
    long value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      int b = readByte();
      value |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return value;
      }
    }
    throw new IllegalArgumentException("malformed varint in window state");
  }

  public long readZigZag() {
    long value = readVarLong();
    return (value >>> 1) ^ -(value & 1);
  }

  public long readLong() {
    need(8);
    long value = 0;
    for (int i = 0; i < 8; i++) {
      value = (value << 8) | (bytes[at++] & 0xFF);
    }
    return value;
  }

  public double readDouble() {
    return Double.longBitsToDouble(readLong());
  }

  public byte[] readBytes() {
    int length = (int) readVarLong();
    need(length);
    byte[] value = new byte[length];
    System.arraycopy(bytes, at, value, 0, length);
    at += length;
    return value;
  }

  public String readString() {
    return new String(readBytes(), StandardCharsets.UTF_8);
  }

  /** Whether every byte was read. */
  public boolean atEnd() {
    return at == bytes.length;
  }

  private void need(int count) {
    if (count < 0 || at + count > bytes.length) {
      throw new IllegalArgumentException("window state ends early");
    }
  }
}
