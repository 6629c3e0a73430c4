package trending.temporal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Count windows by start time (StreamInsight's {@code CountByStartTimeWindow(n)}). With {@code
 * t1 < t2 < ...} the distinct event start times, window {@code j} spans {@code n} consecutive
 * ones and holds the events starting in it, clipped to it:
 *
 * <pre>
 * W(j) = [t_j, t_{j+n-1} + 1)       row [t_{j+n-1}, t_{j+n-1} + 1) -> aggregate(events of W(j))
 * </pre>
 *
 * <p>A window is final once the CTI passes its last start time. The state keeps the events of
 * the last {@code n - 1} final start times and those not yet final.
 */
final class CountWindow implements TemporalWindow {
  static final int CODE = 3;
  final long n;
  final Aggregate aggregate;

  CountWindow(long n, Aggregate aggregate) {
    this.n = n;
    this.aggregate = aggregate;
  }

  @Override
  public int code() {
    return CODE;
  }

  @Override
  public void check(Object value) {
    aggregate.check(value);
  }

  @Override
  public List<Row> emit(TemporalState state, long cti) {
    TreeMap<Long, List<StoredEvent>> byStart = new TreeMap<>();
    for (StoredEvent event : state.events()) {
      if (event.start < cti) {
        byStart.computeIfAbsent(event.start, key -> new ArrayList<>()).add(event);
      }
    }
    long[] starts = byStart.keySet().stream().mapToLong(Long::longValue).toArray();
    List<Row> rows = new ArrayList<>();
    for (long j = n - 1; j < starts.length; j++) {
      if (!state.hasFrontier || starts[(int) j] > state.frontier) {
        rows.add(window(starts, (int) (j - n + 1), (int) j, byStart));
      }
    }
    if (starts.length > 0) {
      state.setFrontier(starts[starts.length - 1]);
    }
    Set<Long> kept = new HashSet<>();
    if (n > 1) {
      for (long i = Math.max(0, starts.length - n + 1); i < starts.length; i++) {
        kept.add(starts[(int) i]);
      }
    }
    state.closed.removeIf(event -> event.start < cti && !kept.contains(event.start));
    for (Iterator<Map.Entry<String, StoredEvent>> it = state.open.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<String, StoredEvent> entry = it.next();
      long start = entry.getValue().start;
      if (start < cti && !kept.contains(start)) {
        it.remove();
        state.ignoredEdges.add(entry.getKey());
      }
    }
    return rows;
  }

  private Row window(long[] starts, int from, int to, Map<Long, List<StoredEvent>> byStart) {
    long last = starts[to];
    long end = last + 1;
    List<Object> values = new ArrayList<>();
    List<Long> lengths = new ArrayList<>();
    for (int i = from; i <= to; i++) {
      for (StoredEvent event : byStart.get(starts[i])) {
        values.add(event.value);
        lengths.add(Math.min(event.end, end) - event.start);
      }
    }
    long[] clipped = lengths.stream().mapToLong(Long::longValue).toArray();
    return new Row(last, end, aggregate.apply(values, clipped, end - starts[from]));
  }
}
