package trending.temporal;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A query over one key's state (changed in place), fed one item at a time: {@link #insert} the
 * events and edges of a key, then {@link #advance} to the CTI for the rows it makes final.
 * Refused input ({@link TemporalInputError}, {@link CtiViolation} under policy {@code fail})
 * leaves the state as it was.
 */
public final class TemporalLogic {
  private final TemporalQuery query;
  private final TemporalState state;
  private long dropped;
  private long adjusted;

  TemporalLogic(TemporalQuery query, TemporalState state) {
    this.query = query;
    this.state = state;
  }

  public TemporalState state() {
    return state;
  }

  /** Late inputs dropped so far (policies {@code drop} and {@code adjust}). */
  public long dropped() {
    return dropped;
  }

  /** Late inputs moved up to the CTI so far (policy {@code adjust}). */
  public long adjusted() {
    return adjusted;
  }

  /** Take an event or edge. */
  public void insert(Item item) {
    if (item instanceof Item.Interval event) {
      interval(event.start(), event.end(), event.value(), event.id());
    } else if (item instanceof Item.StartEdge edge) {
      startEdge(edge.start(), edge.value(), edge.id());
    } else {
      Item.EndEdge edge = (Item.EndEdge) item;
      endEdge(edge.id(), edge.end());
    }
  }

  /** Move the CTI to {@code cti} (input time); the rows it makes final, in time order. */
  public List<Row> advance(long cti) {
    long altered = query.alteration.cti(cti);
    if (altered <= state.cti) {
      return new ArrayList<>();
    }
    closeCapped(altered);
    List<Row> rows = query.window.emit(state, altered);
    state.cti = altered;
    return rows;
  }

  /** An event {@code [start, end)}. */
  public void interval(long start, long end, Object value, String id) {
    if (end <= start) {
      throw new TemporalInputError(Messages.describe(id, start) + " does not end after it starts");
    }
    query.window.check(value);
    Alteration alteration = query.alteration;
    long altered = alteration.start(start);
    store(id, altered, alteration.end(altered, end), value);
  }

  /** The start of an event lasting until the end edge {@code id} (or the end of time). */
  public void startEdge(long start, Object value, String id) {
    if (id != null && (state.open.containsKey(id) || state.ignoredEdges.contains(id))) {
      throw new TemporalInputError("start edge " + PythonText.repr(id) + " is already open");
    }
    query.window.check(value);
    Alteration alteration = query.alteration;
    long altered = alteration.start(start);
    long cap = alteration.cap(altered);
    if (id == null || alteration.fixed()) {
      store(id, altered, cap, value);
      return;
    }
    long[] admitted = admit(id, altered, cap);
    if (admitted == null) {
      state.ignoredEdges.add(id);
    } else {
      state.open.put(id, new StoredEvent(admitted[0], admitted[1], value, id));
    }
  }

  /** The end of the open event {@code id}. */
  public void endEdge(String id, long end) {
    if (query.alteration.fixed() || ignore(id)) {
      return;
    }
    StoredEvent event = state.open.get(id);
    if (event == null) {
      throw new TemporalInputError("end edge " + PythonText.repr(id) + " has no open start edge");
    }
    if (end + query.alteration.shift() <= event.start) {
      throw new TemporalInputError(
          "end edge " + PythonText.repr(id) + " does not end after its start");
    }
    long admitted = admitEnd(event, query.alteration.end(event.start, end));
    state.open.remove(id);
    if (admitted > event.start) {
      state.closed.add(event.withEnd(admitted));
    }
  }

  private boolean ignore(String id) {
    return state.ignoredEdges.remove(id);
  }

  private void store(String id, long start, long end, Object value) {
    if (end > start) {
      long[] admitted = admit(id, start, end);
      if (admitted != null) {
        state.closed.add(new StoredEvent(admitted[0], admitted[1], value, id));
      }
    }
  }

  /** The lifetime to keep for an event starting at {@code start} (null: dropped). */
  private long[] admit(String id, long start, long end) {
    long cti = state.cti;
    if (start >= cti) {
      return new long[] {start, end};
    }
    Violation policy = query.violation;
    if (policy == Violation.FAIL) {
      String name = id != null ? Messages.describe(id, start) : "an event without an id";
      throw new CtiViolation(name + " starts at " + Timeline.format(start) + ", before the CTI "
          + Timeline.format(cti));
    }
    if (policy == Violation.DROP || end <= cti) {
      dropped++;
      return null;
    }
    adjusted++;
    return new long[] {cti, end};
  }

  /** The end to give an open event whose end edge says {@code end}. */
  private long admitEnd(StoredEvent event, long end) {
    long cti = state.cti;
    if (end >= cti || end >= event.end) {
      return Math.min(end, event.end);
    }
    Violation policy = query.violation;
    if (policy == Violation.FAIL) {
      throw new CtiViolation("end edge " + PythonText.repr(event.id) + " ends at "
          + Timeline.format(end) + ", before the CTI " + Timeline.format(cti));
    }
    if (policy == Violation.DROP) {
      dropped++;
      return event.end;
    }
    adjusted++;
    return cti;
  }

  /** Open events whose clip the CTI reaches are closed; their end edges will be ignored. */
  private void closeCapped(long cti) {
    for (Iterator<Map.Entry<String, StoredEvent>> it = state.open.entrySet().iterator();
        it.hasNext(); ) {
      Map.Entry<String, StoredEvent> entry = it.next();
      if (entry.getValue().end <= cti) {
        it.remove();
        state.closed.add(entry.getValue());
        state.ignoredEdges.add(entry.getKey());
      }
    }
  }
}
