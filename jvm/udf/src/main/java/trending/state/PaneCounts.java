package trending.state;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;

/**
 * One hashtag's counts per pane, oldest pane first: the value of its state row.
 *
 * <p>Panes are {@code [a + p*g, a + (p+1)*g)} with {@code g = gcd(size, hop)}; window
 * {@code [s, s + size)} counts the panes starting in it, so its count is a sum over at most
 * {@code size / g} panes. Stored as varints: the number of panes, the first pane's start
 * (zig-zag), then per pane the gap to the previous start in panes and the count.
 */
final class PaneCounts {
  long[] starts;
  long[] counts;
  int size;

  PaneCounts(int capacity) {
    starts = new long[Math.max(capacity, 4)];
    counts = new long[starts.length];
  }

  boolean isEmpty() {
    return size == 0;
  }

  long oldest() {
    return starts[0];
  }

  /** Adds {@code n} to the pane starting at {@code start}, keeping the panes ordered. */
  void add(long start, long n) {
    int at = Arrays.binarySearch(starts, 0, size, start);
    if (at >= 0) {
      counts[at] += n;
      return;
    }
    int insert = -at - 1;
    if (size == starts.length) {
      starts = Arrays.copyOf(starts, size * 2);
      counts = Arrays.copyOf(counts, size * 2);
    }
    System.arraycopy(starts, insert, starts, insert + 1, size - insert);
    System.arraycopy(counts, insert, counts, insert + 1, size - insert);
    starts[insert] = start;
    counts[insert] = n;
    size++;
  }

  /** Sum of the counts of panes starting in {@code [from, to)}. */
  long sum(long from, long to) {
    int at = Arrays.binarySearch(starts, 0, size, from);
    long total = 0;
    for (int i = at >= 0 ? at : -at - 1; i < size && starts[i] < to; i++) {
      total += counts[i];
    }
    return total;
  }

  /** Drops the oldest panes whose start is below {@code start}. */
  void dropBefore(long start) {
    int keep = 0;
    while (keep < size && starts[keep] < start) {
      keep++;
    }
    if (keep > 0) {
      System.arraycopy(starts, keep, starts, 0, size - keep);
      System.arraycopy(counts, keep, counts, 0, size - keep);
      size -= keep;
    }
  }

  /** Appends the panes to {@code out} (see the class comment). */
  void encodeTo(ByteArrayOutputStream out, long paneMs) {
    Varints.write(out, size);
    long previous = 0;
    for (int i = 0; i < size; i++) {
      if (i == 0) {
        Varints.write(out, (starts[0] << 1) ^ (starts[0] >> 63));
      } else {
        Varints.write(out, (starts[i] - previous) / paneMs);
      }
      previous = starts[i];
      Varints.write(out, counts[i]);
    }
  }

  /** Reads panes written by {@link #encodeTo} at {@code at[0]}, advancing it. */
  static PaneCounts decodeFrom(byte[] bytes, int[] at, long paneMs) {
    int n = (int) Varints.read(bytes, at);
    PaneCounts panes = new PaneCounts(n + 2);
    long previous = 0;
    for (int i = 0; i < n; i++) {
      long raw = Varints.read(bytes, at);
      long start = i == 0 ? (raw >>> 1) ^ -(raw & 1) : previous + raw * paneMs;
      panes.starts[i] = start;
      panes.counts[i] = Varints.read(bytes, at);
      previous = start;
    }
    panes.size = n;
    return panes;
  }
}
