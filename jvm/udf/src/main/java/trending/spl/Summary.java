package trending.spl;

/**
 * The summarizers' results riding on a tumbling window's flush events, in the spec's order. Like
 * {@link Tuples}, a view valid only during the event call.
 */
public interface Summary {
  /** The number of summaries. */
  int size();

  /** The name of summary {@code index}. */
  String name(int index);

  /**
   * The result of summary {@code index}: a {@link Long} or {@link Double} (as Python would give
   * an int or a float), {@code null} (min, max and mean of nothing), or for {@code top_k} a new
   * {@link java.util.List} of them, largest first.
   */
  Object value(int index);
}
