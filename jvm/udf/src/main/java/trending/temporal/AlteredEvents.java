package trending.temporal;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Altered events as output: each event with its altered lifetime, no window. An event is output
 * once its lifetime is known and the CTI has passed its start; the rows of one CTI come sorted by
 * start, then end (then in arrival order).
 */
final class AlteredEvents implements TemporalWindow {
  static final int CODE = 4;

  @Override
  public int code() {
    return CODE;
  }

  /** Any value will do. */
  @Override
  public void check(Object value) {}

  @Override
  public List<Row> emit(TemporalState state, long cti) {
    List<StoredEvent> ready = new ArrayList<>();
    for (StoredEvent event : state.closed) {
      if (event.start < cti) {
        ready.add(event);
      }
    }
    ready.sort(Comparator.<StoredEvent>comparingLong(e -> e.start).thenComparingLong(e -> e.end));
    state.closed.removeIf(event -> event.start < cti);
    List<Row> rows = new ArrayList<>(ready.size());
    for (StoredEvent event : ready) {
      rows.add(new Row(event.start, event.end, event.value));
    }
    return rows;
  }
}
