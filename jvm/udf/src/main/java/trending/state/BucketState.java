package trending.state;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * The value of one bucket's state row: the open pane counts of every hashtag hashed to the
 * bucket, and the bucket's pending purge timer.
 *
 * <p>Stored as varints: the timer (zig-zag, {@link #NO_TIMER} when none), the number of tags,
 * then per tag its UTF-8 length and bytes and its {@link PaneCounts}.
 */
final class BucketState {
  static final long NO_TIMER = Long.MIN_VALUE;
  long timerMs = NO_TIMER;
  final Map<String, PaneCounts> tags;

  BucketState(int capacity) {
    tags = new HashMap<>(Math.max(4, capacity * 2));
  }

  boolean isEmpty() {
    return tags.isEmpty();
  }

  /** Drops every pane whose newest window ended at or before {@code watermarkMs}. */
  void dropClosed(SlidingGeometry geometry, long watermarkMs) {
    Iterator<PaneCounts> each = tags.values().iterator();
    while (each.hasNext()) {
      PaneCounts counts = each.next();
      int closed = 0;
      while (closed < counts.size && geometry.lastEnd(counts.starts[closed]) <= watermarkMs) {
        closed++;
      }
      if (closed == counts.size) {
        each.remove();
      } else if (closed > 0) {
        counts.dropBefore(counts.starts[closed]);
      }
    }
  }

  /** The end of the newest window holding any pane: once reached, the bucket is empty. */
  long newestEnd(SlidingGeometry geometry) {
    long newest = Long.MIN_VALUE;
    for (PaneCounts counts : tags.values()) {
      newest = Math.max(newest, geometry.lastEnd(counts.starts[counts.size - 1]));
    }
    return newest;
  }

  byte[] encode(long paneMs) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(16 + tags.size() * 24);
    Varints.write(out, (timerMs << 1) ^ (timerMs >> 63));
    Varints.write(out, tags.size());
    for (Map.Entry<String, PaneCounts> tag : tags.entrySet()) {
      byte[] name = tag.getKey().getBytes(StandardCharsets.UTF_8);
      Varints.write(out, name.length);
      out.write(name, 0, name.length);
      tag.getValue().encodeTo(out, paneMs);
    }
    return out.toByteArray();
  }

  static BucketState decode(byte[] bytes, long paneMs) {
    int[] at = {0};
    long rawTimer = Varints.read(bytes, at);
    int n = (int) Varints.read(bytes, at);
    BucketState state = new BucketState(n + 1);
    state.timerMs = (rawTimer >>> 1) ^ -(rawTimer & 1);
    for (int i = 0; i < n; i++) {
      int length = (int) Varints.read(bytes, at);
      String tag = new String(bytes, at[0], length, StandardCharsets.UTF_8);
      at[0] += length;
      state.tags.put(tag, PaneCounts.decodeFrom(bytes, at, paneMs));
    }
    return state;
  }
}
