package trending.temporal;

/**
 * An event in a query's state: lifetime {@code [start, end)} (provisional while its end edge is
 * awaited), its value (see {@link PythonText} for the kinds of values) and its id (or null).
 * Times are altered times, never snapped ones.
 */
public final class StoredEvent {
  final long start;
  final long end;
  final Object value;
  final String id;

  StoredEvent(long start, long end, Object value, String id) {
    this.start = start;
    this.end = end;
    this.value = value;
    this.id = id;
  }

  StoredEvent withEnd(long newEnd) {
    return new StoredEvent(start, newEnd, value, id);
  }

  public long start() {
    return start;
  }

  public long end() {
    return end;
  }

  public Object value() {
    return value;
  }

  public String id() {
    return id;
  }
}
