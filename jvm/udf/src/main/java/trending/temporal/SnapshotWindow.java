package trending.temporal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;

/**
 * Snapshot windows, and over snapped lifetimes, HoppingWindow2. The boundaries of snapshots are
 * all event start and end times; between consecutive boundaries {@code [b, b')} the live events
 * are constant, and a non-empty set gives one row {@code [b, b') -> aggregate(live events)}.
 *
 * <p>With {@code snap} (a {@link Geometry}) each lifetime is first snapped to the assignments of
 * the hopping windows it falls in: one row per change of the input, not one per hop. A CTI
 * {@code c} makes final every snapshot ending by {@code c} (by {@code snap_start(c)} when
 * snapping).
 */
final class SnapshotWindow implements TemporalWindow {
  static final int SNAPSHOT = 1;
  static final int SNAPPED = 2;
  final Aggregate aggregate;
  final Geometry snap;

  SnapshotWindow(Aggregate aggregate, Geometry snap) {
    this.aggregate = aggregate;
    this.snap = snap;
  }

  @Override
  public int code() {
    return snap == null ? SNAPSHOT : SNAPPED;
  }

  @Override
  public void check(Object value) {
    aggregate.check(value);
  }

  /** The lifetime the snapshots see (the event's own, or its snapped one); null: none. */
  private long[] lifetime(StoredEvent event) {
    if (snap == null) {
      return new long[] {event.start, event.end};
    }
    long start = snap.snapStart(event.start);
    long end = snap.snapEnd(event.end);
    return start < end ? new long[] {start, end} : null;
  }

  private long horizon(long cti) {
    return snap == null ? cti : snap.snapStart(cti);
  }

  @Override
  public List<Row> emit(TemporalState state, long cti) {
    List<long[]> spans = new ArrayList<>();
    List<Object> values = new ArrayList<>();
    for (StoredEvent event : state.events()) {
      long[] span = lifetime(event);
      if (span != null) {
        spans.add(span);
        values.add(event.value);
      }
    }
    long[] boundaries = boundaries(spans, state, cti);
    List<Row> rows = sweep(spans, values, boundaries);
    if (boundaries.length > 0) {
      state.setFrontier(boundaries[boundaries.length - 1]);
    }
    state.closed.removeIf(event -> !stillNeeded(event, state));
    return rows;
  }

  private long[] boundaries(List<long[]> spans, TemporalState state, long cti) {
    long horizon = horizon(cti);
    TreeSet<Long> times = new TreeSet<>();
    for (long[] span : spans) {
      times.add(span[0]);
      times.add(span[1]);
    }
    if (state.hasFrontier) {
      times.add(state.frontier);
    }
    return times.stream().mapToLong(Long::longValue)
        .filter(t -> t <= horizon && (!state.hasFrontier || t >= state.frontier)).toArray();
  }

  /** Events go live by start time (those starting together: the later one first). */
  private List<Row> sweep(List<long[]> spans, List<Object> values, long[] boundaries) {
    Integer[] order = new Integer[spans.size()];
    for (int i = 0; i < order.length; i++) {
      order[i] = i;
    }
    Arrays.sort(order, Comparator.<Integer>comparingLong(i -> spans.get(i)[0])
        .thenComparing(Comparator.reverseOrder()));
    List<Integer> live = new ArrayList<>();
    List<Row> rows = new ArrayList<>();
    int next = 0;
    for (int b = 0; b + 1 < boundaries.length; b++) {
      long start = boundaries[b];
      long end = boundaries[b + 1];
      while (next < order.length && spans.get(order[next])[0] <= start) {
        live.add(order[next++]);
      }
      live.removeIf(i -> spans.get(i)[1] <= start);
      if (!live.isEmpty()) {
        List<Object> in = new ArrayList<>(live.size());
        for (int i : live) {
          in.add(values.get(i));
        }
        long[] lengths = new long[live.size()];
        Arrays.fill(lengths, end - start);
        rows.add(new Row(start, end, aggregate.apply(in, lengths, end - start)));
      }
    }
    return rows;
  }

  private boolean stillNeeded(StoredEvent event, TemporalState state) {
    long[] span = lifetime(event);
    return span != null && (!state.hasFrontier || span[1] > state.frontier);
  }
}
