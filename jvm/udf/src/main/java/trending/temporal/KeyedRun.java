package trending.temporal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * One temporal query applied per key, as a keyed stateful operator runs it (and as Python's
 * {@code KeyedTemporalRun} does): keys are JSON values, equal when Python's {@code
 * json.dumps(key, sort_keys=True)} texts are; a key whose state holds no event keeps none; a
 * start edge's id names its key until its end edge comes.
 */
final class KeyedRun {
  /** A row of a key. */
  record Out(Object key, String name, Row row) {}

  private static final class Keyed {
    final Object key;
    final TemporalState state;

    Keyed(Object key, TemporalState state) {
      this.key = key;
      this.state = state;
    }
  }

  private static final Comparator<Out> ORDER = Comparator.<Out>comparingLong(o -> o.row.start())
      .thenComparingLong(o -> o.row.end())
      .thenComparing(o -> o.name)
      .thenComparing(o -> PythonText.json(o.row.value(), false));

  private final TemporalQuery query;
  private long cti = Timeline.BEGINNING_OF_TIME;
  private final Map<String, Keyed> states = new LinkedHashMap<>();
  private final Map<String, Object> edgeKeys = new HashMap<>();
  long dropped;
  long adjusted;

  KeyedRun(TemporalQuery query) {
    this.query = query;
  }

  /** Feed one event or edge to its key's query. */
  void insert(Object key, Item item) {
    if (item instanceof Item.StartEdge edge && edge.id() != null) {
      if (edgeKeys.containsKey(edge.id())) {
        throw new TemporalInputError(
            "start edge " + PythonText.repr(edge.id()) + " is already open");
      }
      edgeKeys.put(edge.id(), key);
    }
    apply(key, logic -> {
      logic.insert(item);
      return null;
    });
  }

  /** Close start edge {@code id} (of {@code key}, or when null of its start edge's key). */
  void endEdge(String id, long end, Object key) {
    if (!edgeKeys.containsKey(id)) {
      throw new TemporalInputError("end edge " + PythonText.repr(id) + " has no open start edge");
    }
    insert(key == null ? edgeKeys.remove(id) : key, new Item.EndEdge(id, end));
  }

  /** Advance every key to CTI {@code time}; the rows made final, in output order. */
  List<Out> advance(long time) {
    List<Out> out = new ArrayList<>();
    if (time <= cti) {
      return out;
    }
    cti = time;
    for (Keyed keyed : new ArrayList<>(states.values())) {
      String name = PythonText.json(keyed.key, true);
      for (Row row : apply(keyed.key, logic -> logic.advance(time))) {
        out.add(new Out(keyed.key, name, row));
      }
    }
    out.sort(ORDER);
    return out;
  }

  /** Encode every key's state, go on with states decoded from the bytes. */
  void roundTrip() {
    for (Map.Entry<String, Keyed> entry : states.entrySet()) {
      byte[] bytes = query.encode(entry.getValue().state);
      TemporalState restored = query.restore(bytes);
      if (!Arrays.equals(bytes, query.encode(restored))) {
        throw new IllegalStateException("a restored state encodes to other bytes");
      }
      entry.setValue(new Keyed(entry.getValue().key, restored));
    }
  }

  private <T> T apply(Object key, Function<TemporalLogic, T> action) {
    String name = PythonText.json(key, true);
    Keyed known = states.get(name);
    TemporalState state = known != null ? known.state : query.initialState(cti);
    TemporalLogic logic = query.build(state);
    T result = action.apply(logic);
    dropped += logic.dropped();
    adjusted += logic.adjusted();
    if (state.isIdle()) {
      states.remove(name);
    } else {
      states.put(name, new Keyed(key, state));
    }
    return result;
  }
}
