package trending.spl;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * The whole state of a window as bytes, for an engine's state store. Layout (varints are
 * unsigned LEB128, zigzag ones signed):
 *
 * <pre>
 * state     = version:byte kind:byte now:zigzag seq:varint
 *             count:varint partition*   (creation order)
 *             count:varint partition*   (dormant)
 * partition = key:K size:varint count:varint (time:zigzag record:R)*   (time: minus the last)
 *             flags:byte [first:double] [ref:double] since:varint last_ms:zigzag
 *             last_seq:varint [summaries]
 * flags     = 1 full | 2 first | 4 ref | 8 summaries
 * </pre>
 *
 * <p>The LRU order is the order of {@code last_seq}; the delta eviction values kept beside the
 * tuples are read again from the tuples. Tuples and keys go through the caller's {@link Codec}s.
 */
final class StateCodec {
  private StateCodec() {}

  static <R, K> byte[] encode(WindowLogic<R, K> logic, Codec<R> records, Codec<K> keys) {
    WindowState<R, K> state = logic.state;
    StateOutput out = new StateOutput();
    out.writeByte(WindowState.VERSION);
    out.writeByte(logic.config.kind().ordinal());
    out.writeZigZag(state.nowMs);
    out.writeVarLong(state.seq);
    out.writeVarLong(state.partitions.size());
    for (Partition<R, K> p = state.firstCreated; p != null; p = p.nextCreated) {
      writePartition(p, out, records, keys);
    }
    out.writeVarLong(state.dormant.size());
    for (Partition<R, K> p : state.dormant.values()) {
      writePartition(p, out, records, keys);
    }
    return out.toByteArray();
  }

  static <R, K> void decode(WindowLogic<R, K> logic, byte[] bytes, Codec<R> records,
      Codec<K> keys) {
    StateInput in = new StateInput(bytes);
    int version = in.readByte();
    if (version != WindowState.VERSION) {
      throw new IllegalArgumentException("unsupported window state version " + version);
    }
    int kind = in.readByte();
    if (kind != logic.config.kind().ordinal()) {
      throw new IllegalArgumentException("window state of another kind of window");
    }
    WindowState<R, K> state = logic.state;
    state.nowMs = in.readZigZag();
    state.seq = in.readVarLong();
    long count = in.readVarLong();
    List<Partition<R, K>> parts = new ArrayList<>();
    for (long i = 0; i < count; i++) {
      parts.add(readPartition(logic, in, records, keys));
    }
    List<Partition<R, K>> byUse = new ArrayList<>(parts);
    byUse.sort(Comparator.comparingLong(p -> p.lastSeq));
    for (Partition<R, K> p : parts) {
      state.add(p);
    }
    for (Partition<R, K> p : byUse) {
      state.touch(p);
    }
    long dormant = in.readVarLong();
    for (long i = 0; i < dormant; i++) {
      Partition<R, K> p = readPartition(logic, in, records, keys);
      state.dormant.put(p.key, p);
    }
    if (!in.atEnd()) {
      throw new IllegalArgumentException("window state has bytes after its end");
    }
  }

  private static <R, K> void writePartition(Partition<R, K> p, StateOutput out, Codec<R> records,
      Codec<K> keys) {
    keys.write(p.key, out);
    out.writeVarLong(p.size);
    Entries<R> entries = p.entries;
    out.writeVarLong(entries.size());
    long last = 0;
    for (int i = 0; i < entries.size(); i++) {
      out.writeZigZag(entries.time(i) - last);
      last = entries.time(i);
      records.write(entries.get(i), out);
    }
    int flags = (p.full ? 1 : 0) | (p.hasFirst ? 2 : 0) | (p.hasRef ? 4 : 0)
        | (p.summaries != null ? 8 : 0);
    out.writeByte(flags);
    if (p.hasFirst) {
      out.writeDouble(p.firstValue);
    }
    if (p.hasRef) {
      out.writeDouble(p.triggerRef);
    }
    out.writeVarLong(p.sinceTrigger);
    out.writeZigZag(p.lastInsertMs);
    out.writeVarLong(p.lastSeq);
    if (p.summaries != null) {
      p.summaries.write(out);
    }
  }

  private static <R, K> Partition<R, K> readPartition(WindowLogic<R, K> logic, StateInput in,
      Codec<R> records, Codec<K> keys) {
    boolean values = logic.keepsValues();
    Partition<R, K> p = new Partition<>(keys.read(in), values);
    p.size = in.readVarLong();
    long count = in.readVarLong();
    long time = 0;
    for (long i = 0; i < count; i++) {
      time += in.readZigZag();
      R record = records.read(in);
      double value = values ? logic.entryValue(record) : 0;
      p.entries.append(time, record, value);
      if (values) {
        p.minValue = Math.min(p.minValue, value);
      }
    }
    int flags = in.readByte();
    p.full = (flags & 1) != 0;
    p.hasFirst = (flags & 2) != 0;
    p.hasRef = (flags & 4) != 0;
    if (p.hasFirst) {
      p.firstValue = in.readDouble();
    }
    if (p.hasRef) {
      p.triggerRef = in.readDouble();
    }
    p.sinceTrigger = in.readVarLong();
    p.lastInsertMs = in.readZigZag();
    p.lastSeq = in.readVarLong();
    if ((flags & 8) != 0) {
      p.summaries = Summaries.read(logic.summarizers, in);
    }
    return p;
  }
}
