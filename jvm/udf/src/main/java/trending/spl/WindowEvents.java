package trending.spl;

/**
 * Where a window's verbs deliver the events they fire, in the order SPL calls its handlers.
 *
 * <p>Tuples per kind: {@code before_insert}, {@code after_insert}, {@code before_evict} and
 * {@code after_evict} carry the one tuple; {@code trigger}, {@code initial_full}, {@code
 * before_flush} and {@code partition_evict} the window (or partition) content; {@code
 * after_flush} and {@code empty_punct} nothing. {@code summary} is non-null on the flush events
 * of a tumbling window with summarizers. {@code timeMs} is the window clock at the event.
 *
 * <p>The views passed in are valid only during the call, and the receiver must not call the
 * window back from inside it.
 */
@FunctionalInterface
public interface WindowEvents<R, K> {
  void on(EventKind kind, K partition, Tuples<R> tuples, long timeMs, Summary summary);
}
