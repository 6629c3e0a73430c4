package trending.spl;

/**
 * How a window reads the attributes of its opaque tuples {@code R}: the numbers the delta
 * policies and the summarizers need. An attribute name is resolved once to an index ({@link
 * #index}) when a window is built; the per-tuple reads then take that index (for Spark rows, a
 * column index).
 *
 * <p>A value is an {@link #INTEGER} (a Python {@code int}: a JSON integer, a Spark integral
 * column), a {@link #REAL} (a Python {@code float}), {@link #ABSENT} (no such attribute) or
 * {@link #OTHER} (anything else: strings, booleans, nulls). The window refuses the tuple with
 * an {@link InputError} when a policy or a summarizer needs a number that is not there.
 */
public interface Attributes<R> {
  int ABSENT = 0;
  int OTHER = 1;
  int INTEGER = 2;
  int REAL = 3;

  /** The index the per-tuple reads take for the attribute {@code name}. */
  int index(String name);

  /** The kind of value {@code record} has at {@code index}: {@link #ABSENT} ... {@link #REAL}. */
  int kind(R record, int index);

  /** The value at {@code index}, whose kind is {@link #INTEGER}. */
  long integer(R record, int index);

  /** The value at {@code index}, whose kind is {@link #REAL}. */
  double real(R record, int index);
}
