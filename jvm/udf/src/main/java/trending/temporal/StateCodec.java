package trending.temporal;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import trending.spl.StateInput;
import trending.spl.StateOutput;

/**
 * One key's {@link TemporalState} as bytes, for an engine's state store. Layout (varints are
 * unsigned LEB128, zigzag ones signed):
 *
 * <pre>
 * state  = version:byte window:byte cti:zigzag has_frontier:byte [frontier:zigzag]
 *          count:varint event*   (closed, in order)
 *          count:varint event*   (open, in arrival order)
 *          count:varint id:string*   (ignored end edges, sorted)
 * event  = start:zigzag (minus the previous event's start) length:zigzag tag:byte [id:string]
 *          value
 * tag    = value kind | 0x80 when the event has an id
 * value  = by kind: 0 null | 1 long:zigzag | 2 double:8 bytes | 3 big integer:bytes
 *          | 4 string | 5 true | 6 false | 7 count:varint (tag value)* (a list)
 *          | 8 count:varint (key:string tag value)* (a map)
 * </pre>
 *
 * <p>Inside a list or map each value has its own tag byte (without the id bit).
 */
final class StateCodec {
  static final int VERSION = 1;
  private static final int ID = 0x80;

  private StateCodec() {}

  static byte[] encode(TemporalState state) {
    StateOutput out = new StateOutput();
    out.writeByte(VERSION);
    out.writeByte(state.window.code());
    out.writeZigZag(state.cti);
    out.writeBoolean(state.hasFrontier);
    if (state.hasFrontier) {
      out.writeZigZag(state.frontier);
    }
    writeEvents(state.closed, out);
    writeEvents(new ArrayList<>(state.open.values()), out);
    out.writeVarLong(state.ignoredEdges.size());
    for (String id : new TreeSet<>(state.ignoredEdges)) {
      out.writeString(id);
    }
    return out.toByteArray();
  }

  static TemporalState decode(TemporalQuery query, byte[] bytes) {
    StateInput in = new StateInput(bytes);
    int version = in.readByte();
    if (version != VERSION) {
      throw new IllegalArgumentException("unsupported temporal state version " + version);
    }
    int window = in.readByte();
    if (window != query.window.code()) {
      throw new IllegalArgumentException("temporal state of another kind of window");
    }
    TemporalState state = new TemporalState(query.window, in.readZigZag());
    if (in.readBoolean()) {
      state.setFrontier(in.readZigZag());
    }
    state.closed.addAll(readEvents(in));
    for (StoredEvent event : readEvents(in)) {
      state.open.put(event.id, event);
    }
    long ignored = in.readVarLong();
    for (long i = 0; i < ignored; i++) {
      state.ignoredEdges.add(in.readString());
    }
    if (!in.atEnd()) {
      throw new IllegalArgumentException("temporal state has bytes after its end");
    }
    return state;
  }

  private static void writeEvents(List<StoredEvent> events, StateOutput out) {
    out.writeVarLong(events.size());
    long last = 0;
    for (StoredEvent event : events) {
      out.writeZigZag(event.start - last);
      last = event.start;
      out.writeZigZag(event.end - event.start);
      int tag = kind(event.value) | (event.id != null ? ID : 0);
      out.writeByte(tag);
      if (event.id != null) {
        out.writeString(event.id);
      }
      writeBody(event.value, out);
    }
  }

  private static List<StoredEvent> readEvents(StateInput in) {
    long count = in.readVarLong();
    List<StoredEvent> events = new ArrayList<>();
    long start = 0;
    for (long i = 0; i < count; i++) {
      start += in.readZigZag();
      long end = start + in.readZigZag();
      int tag = in.readByte();
      String id = (tag & ID) != 0 ? in.readString() : null;
      events.add(new StoredEvent(start, end, readBody(tag & ~ID, in), id));
    }
    return events;
  }

  private static int kind(Object value) {
    if (value == null) {
      return 0;
    } else if (value instanceof Long) {
      return 1;
    } else if (value instanceof Double) {
      return 2;
    } else if (value instanceof BigInteger) {
      return 3;
    } else if (value instanceof String) {
      return 4;
    } else if (value instanceof Boolean b) {
      return b ? 5 : 6;
    } else if (value instanceof List) {
      return 7;
    } else if (value instanceof Map) {
      return 8;
    }
    throw new IllegalArgumentException("a value the temporal state cannot hold: " + value);
  }

  private static void writeValue(Object value, StateOutput out) {
    out.writeByte(kind(value));
    writeBody(value, out);
  }

  private static void writeBody(Object value, StateOutput out) {
    if (value instanceof Long l) {
      out.writeZigZag(l);
    } else if (value instanceof Double d) {
      out.writeDouble(d);
    } else if (value instanceof BigInteger b) {
      out.writeBytes(b.toByteArray());
    } else if (value instanceof String s) {
      out.writeString(s);
    } else if (value instanceof List<?> list) {
      out.writeVarLong(list.size());
      for (Object item : list) {
        writeValue(item, out);
      }
    } else if (value instanceof Map<?, ?> map) {
      out.writeVarLong(map.size());
      for (Map.Entry<?, ?> entry : map.entrySet()) {
        out.writeString((String) entry.getKey());
        writeValue(entry.getValue(), out);
      }
    }
  }

  private static Object readBody(int kind, StateInput in) {
    switch (kind) {
      case 0:
        return null;
      case 1:
        return in.readZigZag();
      case 2:
        return in.readDouble();
      case 3:
        return new BigInteger(in.readBytes());
      case 4:
        return in.readString();
      case 5:
        return Boolean.TRUE;
      case 6:
        return Boolean.FALSE;
      case 7: {
        long count = in.readVarLong();
        List<Object> list = new ArrayList<>();
        for (long i = 0; i < count; i++) {
          list.add(readBody(in.readByte(), in));
        }
        return list;
      }
      case 8: {
        long count = in.readVarLong();
        Map<String, Object> map = new LinkedHashMap<>();
        for (long i = 0; i < count; i++) {
          String key = in.readString();
          map.put(key, readBody(in.readByte(), in));
        }
        return map;
      }
      default:
        throw new IllegalArgumentException("unknown value kind " + kind + " in temporal state");
    }
  }
}
