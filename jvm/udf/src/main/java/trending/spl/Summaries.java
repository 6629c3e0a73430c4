package trending.spl;

import java.util.ArrayList;
import java.util.List;

/**
 * The summarizers' state of one open tumbling window, and the {@link Summary} view of their
 * results. Per summarizer {@code i}: {@code n[i]} counts the tuples (count, mean); {@code
 * real[i]} and {@code bits[i]} hold a number (sum, the mean's sum, min, max) as {@link Numbers}
 * does, {@code has[i]} whether min/max have seen one; top-k keeps the at most {@code k} largest
 * values in ascending order in {@code topReal[i]}, {@code topBits[i]} ({@code topSize[i]} of
 * them).
 */
final class Summaries implements Summary {
  final Summarizer[] specs;
  final long[] n;
  final boolean[] real;
  final long[] bits;
  final boolean[] has;
  final boolean[][] topReal;
  final long[][] topBits;
  final int[] topSize;

  Summaries(Summarizer[] specs) {
    int count = specs.length;
    this.specs = specs;
    n = new long[count];
    real = new boolean[count];
    bits = new long[count];
    has = new boolean[count];
    topReal = new boolean[count][];
    topBits = new long[count][];
    topSize = new int[count];
    for (int i = 0; i < count; i++) {
      if (specs[i].kind() == Summarizer.Kind.TOP_K) {
        topReal[i] = new boolean[specs[i].k() + 1];
        topBits[i] = new long[specs[i].k() + 1];
      }
    }
  }

  /** Add a number to summarizer {@code i}'s state. */
  void add(int i, boolean isReal, long value) {
    switch (specs[i].kind()) {
      case COUNT -> n[i]++;
      case SUM -> addToSum(i, isReal, value);
      case MEAN -> {
        n[i]++;
        addToSum(i, isReal, value);
      }
      // Python's min(state, x) and max(state, x): x replaces the state only if strictly beyond
      case MIN -> keepIf(i, isReal, value, !has[i] || less(i, isReal, value, true));
      case MAX -> keepIf(i, isReal, value, !has[i] || less(i, isReal, value, false));
      case TOP_K -> addToTop(i, isReal, value);
    }
  }

  /** {@code x < state} ({@code below}) or {@code state < x}, exactly. */
  private boolean less(int i, boolean isReal, long value, boolean below) {
    return below
        ? Numbers.less(isReal, value, real[i], bits[i])
        : Numbers.less(real[i], bits[i], isReal, value);
  }

  /** {@code state + value} as Python adds: integers stay integers until a float comes. */
  private void addToSum(int i, boolean isReal, long value) {
    if (!real[i] && !isReal) {
      bits[i] = Math.addExact(bits[i], value);
    } else {
      bits[i] = Numbers.bits(Numbers.asDouble(real[i], bits[i]) + Numbers.asDouble(isReal, value));
      real[i] = true;
    }
  }

  private void keepIf(int i, boolean isReal, long value, boolean keep) {
    if (keep) {
      has[i] = true;
      real[i] = isReal;
      bits[i] = value;
    }
  }

  /** {@code bisect.insort} (after equal values), then drop the smallest beyond {@code k}. */
  private void addToTop(int i, boolean isReal, long value) {
    boolean[] reals = topReal[i];
    long[] values = topBits[i];
    int size = topSize[i];
    int lo = 0;
    int hi = size;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (Numbers.less(isReal, value, reals[mid], values[mid])) {
        hi = mid;
      } else {
        lo = mid + 1;
      }
    }
    System.arraycopy(reals, lo, reals, lo + 1, size - lo);
    System.arraycopy(values, lo, values, lo + 1, size - lo);
    reals[lo] = isReal;
    values[lo] = value;
    size++;
    if (size > specs[i].k()) {
      System.arraycopy(reals, 1, reals, 0, size - 1);
      System.arraycopy(values, 1, values, 0, size - 1);
      size--;
    }
    topSize[i] = size;
  }

  @Override
  public int size() {
    return specs.length;
  }

  @Override
  public String name(int index) {
    return specs[index].name();
  }

  @Override
  public Object value(int i) {
    return switch (specs[i].kind()) {
      case COUNT -> n[i];
      case SUM -> Numbers.box(real[i], bits[i]);
      case MIN, MAX -> has[i] ? Numbers.box(real[i], bits[i]) : null;
      case MEAN -> n[i] == 0 ? null : (Object) (Numbers.asDouble(real[i], bits[i]) / n[i]);
      case TOP_K -> top(i);
    };
  }

  private List<Object> top(int i) {
    List<Object> values = new ArrayList<>(topSize[i]);
    for (int j = topSize[i] - 1; j >= 0; j--) {
      values.add(Numbers.box(topReal[i][j], topBits[i][j]));
    }
    return values;
  }

  void write(StateOutput out) {
    for (int i = 0; i < specs.length; i++) {
      out.writeVarLong(n[i]);
      out.writeByte((real[i] ? 1 : 0) | (has[i] ? 2 : 0));
      out.writeLong(bits[i]);
      if (topBits[i] != null) {
        out.writeVarLong(topSize[i]);
        for (int j = 0; j < topSize[i]; j++) {
          out.writeBoolean(topReal[i][j]);
          out.writeLong(topBits[i][j]);
        }
      }
    }
  }

  static Summaries read(Summarizer[] specs, StateInput in) {
    Summaries state = new Summaries(specs);
    for (int i = 0; i < specs.length; i++) {
      state.n[i] = in.readVarLong();
      int flags = in.readByte();
      state.real[i] = (flags & 1) != 0;
      state.has[i] = (flags & 2) != 0;
      state.bits[i] = in.readLong();
      if (state.topBits[i] != null) {
        int size = (int) in.readVarLong();
        for (int j = 0; j < size; j++) {
          state.topReal[i][j] = in.readBoolean();
          state.topBits[i][j] = in.readLong();
        }
        state.topSize[i] = size;
      }
    }
    return state;
  }
}
