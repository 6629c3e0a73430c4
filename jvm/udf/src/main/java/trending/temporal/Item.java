package trending.temporal;

/** An input of a query: an interval event, a start edge or an end edge. */
public sealed interface Item {
  /** An event whose whole lifetime {@code [start, end)} is known on arrival. */
  record Interval(long start, long end, Object value, String id) implements Item {}

  /** The start of an event that lasts until its end edge ({@code id}) or the end of time. */
  record StartEdge(long start, Object value, String id) implements Item {}

  /** The end of the open event {@code id}: its lifetime becomes {@code [start, end)}. */
  record EndEdge(String id, long end) implements Item {}
}
