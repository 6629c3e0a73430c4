package trending.spl;

/**
 * How the state encoding writes and reads what the window holds but does not understand: its
 * tuples {@code R} and partition keys {@code K}. {@link Codecs#SCALARS} encodes the scalar keys
 * of a column (null, booleans, integers, floats, strings).
 */
public interface Codec<T> {
  void write(T value, StateOutput out);

  T read(StateInput in);
}
