package trending.spl;

/** Codecs the callers share. */
public final class Codecs {
  private Codecs() {}

  /**
   * Scalar partition keys, as a Spark key column holds them: {@code null}, {@link Boolean},
   * {@link Long} (and {@link Integer}, read back as {@link Long}), {@link Double} or {@link
   * String}.
   */
  public static final Codec<Object> SCALARS =
      new Codec<>() {
        @Override
        public void write(Object value, StateOutput out) {
          if (value == null) {
            out.writeByte(0);
          } else if (value instanceof Boolean b) {
            out.writeByte(b ? 2 : 1);
          } else if (value instanceof Long || value instanceof Integer) {
            out.writeByte(3);
            out.writeZigZag(((Number) value).longValue());
          } else if (value instanceof Double d) {
            out.writeByte(4);
            out.writeDouble(d);
          } else if (value instanceof String s) {
            out.writeByte(5);
            out.writeString(s);
          } else {
            throw new IllegalArgumentException("not a scalar partition key: " + value.getClass());
          }
        }

        @Override
        public Object read(StateInput in) {
          int tag = in.readByte();
          return switch (tag) {
            case 0 -> null;
            case 1 -> Boolean.FALSE;
            case 2 -> Boolean.TRUE;
            case 3 -> in.readZigZag();
            case 4 -> in.readDouble();
            case 5 -> in.readString();
            default -> throw new IllegalArgumentException("unknown key tag " + tag);
          };
        }
      };
}
