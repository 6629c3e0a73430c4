package trending.sensors;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;

/**
 * A reading in a cell's state: its window and number there, its order key, its fields and how
 * many queries matched it so far; {@code evicted} once the batch's notice says which reading
 * evicts it ({@code (ets, 0, epart, eoff)}).
 */
final class CellReading {
  static final int BYTES = 8 * 8 + 4 + 4;
  final long w, seq, ts, offset, sensor;
  final int partition;
  final double x, y, value;
  int matches;
  boolean evicted;
  long ets, eoff;
  int epart;

  CellReading(long w, long seq, long ts, int partition, long offset, long sensor, double x,
      double y, double value, int matches) {
    this.w = w;
    this.seq = seq;
    this.ts = ts;
    this.partition = partition;
    this.offset = offset;
    this.sensor = sensor;
    this.x = x;
    this.y = y;
    this.value = value;
    this.matches = matches;
  }

  static CellReading of(Row in) {
    return new CellReading(in.getLong(CellInput.W), in.getLong(CellInput.SEQ),
        in.getLong(CellInput.TS), in.getInt(CellInput.PARTITION), in.getLong(CellInput.OFFSET),
        in.getLong(CellInput.ID), in.getDouble(CellInput.X), in.getDouble(CellInput.Y),
        in.getDouble(CellInput.V), 0);
  }

  /** Whether this reading was in its window when query {@code q} was applied, before it. */
  boolean inWindowAt(Row q) {
    long qts = q.getLong(CellInput.TS);
    int qpart = q.getInt(CellInput.PARTITION);
    long qoff = q.getLong(CellInput.OFFSET);
    boolean inserted =
        Events.compare(ts, Events.READING, partition, offset, qts, Events.QUERY, qpart, qoff) < 0;
    return inserted
        && (!evicted
            || Events.compare(qts, Events.QUERY, qpart, qoff, ets, Events.READING, epart, eoff)
                < 0);
  }

  /** {@code sqrt((x - qx)^2 + (y - qy)^2) <= d}. */
  boolean within(double qx, double qy, double d) {
    double dx = x - qx, dy = y - qy;
    return Math.sqrt(dx * dx + dy * dy) <= d;
  }

  static byte[] encode(List<CellReading> readings) {
    ByteBuffer out = ByteBuffer.allocate(4 + readings.size() * BYTES);
    out.putInt(readings.size());
    for (CellReading r : readings) {
      out.putLong(r.w).putLong(r.seq).putLong(r.ts).putInt(r.partition).putLong(r.offset)
          .putLong(r.sensor).putDouble(r.x).putDouble(r.y).putDouble(r.value).putInt(r.matches);
    }
    return out.array();
  }

  static List<CellReading> decode(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    int n = in.getInt();
    List<CellReading> readings = new ArrayList<>(n + 8);
    for (int i = 0; i < n; i++) {
      readings.add(new CellReading(in.getLong(), in.getLong(), in.getLong(), in.getInt(),
          in.getLong(), in.getLong(), in.getDouble(), in.getDouble(), in.getDouble(),
          in.getInt()));
    }
    return readings;
  }
}
