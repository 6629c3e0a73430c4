package trending.spl;

/**
 * The window events of the SPL windowing library, in the replay format's names (SPL handler in
 * brackets); see {@link WindowEvents} for the tuples each one carries.
 */
public enum EventKind {
  /** beforeTupleInsertionEvent: the tuple being inserted. */
  BEFORE_INSERT("before_insert"),
  /** afterTupleInsertionEvent: the tuple just inserted. */
  AFTER_INSERT("after_insert"),
  /** beforeWindowFlushEvent (tumbling): the content to flush. */
  BEFORE_FLUSH("before_flush"),
  /** afterWindowFlushEvent (tumbling): no tuples, the window is now empty. */
  AFTER_FLUSH("after_flush"),
  /** onEmptyWindowPunctEvent (tumbling, punct): no tuples, partition {@code null}. */
  EMPTY_PUNCT("empty_punct"),
  /** beforeTupleEvictionEvent (sliding): the tuple being evicted. */
  BEFORE_EVICT("before_evict"),
  /** afterTupleEvictionEvent (sliding): the tuple just evicted. */
  AFTER_EVICT("after_evict"),
  /** onWindowTriggerEvent (sliding): the window content. */
  TRIGGER("trigger"),
  /** onWindowInitialFullEvent (sliding): the window content. */
  INITIAL_FULL("initial_full"),
  /** onWindowPartitionEvictionSelection: only with an operator's selector, never here. */
  PARTITION_SELECT("partition_select"),
  /** onWindowPartitionEviction: the evicted partition's content. */
  PARTITION_EVICT("partition_evict");

  private final String json;

  EventKind(String json) {
    this.json = json;
  }

  /** The name in the replay format ({@code "before_insert"}, ...). */
  public String json() {
    return json;
  }
}
