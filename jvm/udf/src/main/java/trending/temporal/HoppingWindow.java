package trending.temporal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Hopping and tumbling windows, one row per non-empty window. An event {@code [s, e)} falls in
 * every window {@code W(n)} it intersects and is clipped to it:
 *
 * <pre>
 * row [a + n*p, a + n*p + d) -> aggregate(events clipped to W(n))
 * </pre>
 *
 * <p>A window is final once the CTI reaches its end. One step refuses to put an event in more
 * than {@code maxWindows} windows.
 */
final class HoppingWindow implements TemporalWindow {
  static final int CODE = 0;
  final Geometry geometry;
  final Aggregate aggregate;
  final long maxWindows;

  HoppingWindow(Geometry geometry, Aggregate aggregate, long maxWindows) {
    this.geometry = geometry;
    this.aggregate = aggregate;
    this.maxWindows = maxWindows;
  }

  @Override
  public int code() {
    return CODE;
  }

  @Override
  public void check(Object value) {
    aggregate.check(value);
  }

  /** Windows ending in {@code (state.cti, cti]}; forgets events ending before the next one. */
  @Override
  public List<Row> emit(TemporalState state, long cti) {
    long first = geometry.firstEndingAfter(state.cti);
    long last = geometry.lastEndingBy(cti);
    TreeMap<Long, Members> members = new TreeMap<>();
    for (StoredEvent event : state.events()) {
      place(event, first, last + 1, members);
    }
    List<Row> rows = new ArrayList<>(members.size());
    for (Map.Entry<Long, Members> entry : members.entrySet()) {
      long n = entry.getKey();
      Members m = entry.getValue();
      Object value = aggregate.apply(m.values, Arrays.copyOf(m.lengths, m.values.size()),
          geometry.duration);
      rows.add(new Row(geometry.start(n), geometry.end(n), value));
    }
    long nextStart = geometry.start(last + 1);
    state.closed.removeIf(event -> event.end <= nextStart);
    return rows;
  }

  private void place(StoredEvent event, long first, long stop, TreeMap<Long, Members> members) {
    long lo = Math.max(geometry.firstEndingAfter(event.start), first);
    long hi = Math.min(geometry.lastStartingBefore(event.end) + 1, stop);
    if (hi - lo > maxWindows) {
      throw new TemporalInputError(Messages.describe(event.id, event.start) + " falls in "
          + (hi - lo) + " hopping windows at once; use \"snap\": true (HoppingWindow2) for "
          + "long-lived events");
    }
    for (long n = lo; n < hi; n++) {
      long length = Math.min(event.end, geometry.end(n)) - Math.max(event.start, geometry.start(n));
      members.computeIfAbsent(n, key -> new Members()).add(event.value, length);
    }
  }

  /** The values of one window's events and their clipped lengths, in event order. */
  private static final class Members {
    final List<Object> values = new ArrayList<>();
    long[] lengths = new long[4];

    void add(Object value, long length) {
      if (values.size() == lengths.length) {
        lengths = Arrays.copyOf(lengths, lengths.length * 2);
      }
      lengths[values.size()] = length;
      values.add(value);
    }
  }
}
