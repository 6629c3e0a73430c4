package trending.spl;

import java.util.Arrays;

/**
 * A partition's tuples and their insertion times, oldest first, in a ring buffer: O(1) amortized
 * append and removal of the oldest; removal from the middle (delta eviction) compacts in place.
 * With {@code values}, each tuple's delta eviction attribute is kept beside it, read once.
 * The entries are themselves the view of the window content handed to events.
 */
final class Entries<R> implements Tuples<R> {
  private static final int INITIAL = 4;

  private Object[] records;
  private long[] times;
  private double[] values;
  private int head;
  private int size;

  Entries(boolean withValues) {
    records = new Object[INITIAL];
    times = new long[INITIAL];
    values = withValues ? new double[INITIAL] : null;
  }

  @Override
  public int size() {
    return size;
  }

  @Override
  @SuppressWarnings("unchecked")
  public R get(int index) {
    if (index < 0 || index >= size) {
      throw new IndexOutOfBoundsException(index);
    }
    return (R) records[slot(index)];
  }

  long time(int index) {
    return times[slot(index)];
  }

  double value(int index) {
    return values[slot(index)];
  }

  boolean isEmpty() {
    return size == 0;
  }

  void append(long atMs, R record, double value) {
    if (size == records.length) {
      grow();
    }
    int at = slot(size);
    records[at] = record;
    times[at] = atMs;
    if (values != null) {
      values[at] = value;
    }
    size++;
  }

  R oldest() {
    return get(0);
  }

  long oldestTime() {
    return times[head];
  }

  void popOldest() {
    records[head] = null;
    head = (head + 1) & (records.length - 1);
    size--;
  }

  /**
   * Remove every tuple whose value {@code v} has {@code value - v > limit}, keeping the others in
   * order; the removed tuples go to {@code removed}, oldest first. Returns how many.
   */
  int removeBeyond(double value, double limit, Object[] removed) {
    int kept = 0;
    int gone = 0;
    for (int i = 0; i < size; i++) {
      int from = slot(i);
      if (value - values[from] > limit) {
        removed[gone++] = records[from];
        continue;
      }
      int to = slot(kept++);
      records[to] = records[from];
      times[to] = times[from];
      values[to] = values[from];
    }
    for (int i = kept; i < size; i++) {
      records[slot(i)] = null;
    }
    size = kept;
    return gone;
  }

  /** The smallest kept value ({@code +inf} when empty). */
  double minValue() {
    double min = Double.POSITIVE_INFINITY;
    for (int i = 0; i < size; i++) {
      min = Math.min(min, values[slot(i)]);
    }
    return min;
  }

  void clear() {
    Arrays.fill(records, null);
    head = 0;
    size = 0;
  }

  private int slot(int index) {
    return (head + index) & (records.length - 1);
  }

  private void grow() {
    int capacity = records.length * 2;
    Object[] newRecords = new Object[capacity];
    long[] newTimes = new long[capacity];
    double[] newValues = values == null ? null : new double[capacity];
    for (int i = 0; i < size; i++) {
      int from = slot(i);
      newRecords[i] = records[from];
      newTimes[i] = times[from];
      if (newValues != null) {
        newValues[i] = values[from];
      }
    }
    records = newRecords;
    times = newTimes;
    values = newValues;
    head = 0;
  }
}
