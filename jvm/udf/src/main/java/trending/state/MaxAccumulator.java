package trending.state;

import org.apache.spark.util.AccumulatorV2;

/** The largest long added by any task ({@code Long.MIN_VALUE} when none was). */
public final class MaxAccumulator extends AccumulatorV2<Long, Long> {
  private static final long serialVersionUID = 1L;
  private long max = Long.MIN_VALUE;

  @Override
  public boolean isZero() {
    return max == Long.MIN_VALUE;
  }

  @Override
  public MaxAccumulator copy() {
    MaxAccumulator copy = new MaxAccumulator();
    copy.max = max;
    return copy;
  }

  @Override
  public void reset() {
    max = Long.MIN_VALUE;
  }

  @Override
  public void add(Long value) {
    addLong(value);
  }

  /** Adds without boxing. */
  public void addLong(long value) {
    if (value > max) {
      max = value;
    }
  }

  @Override
  public void merge(AccumulatorV2<Long, Long> other) {
    addLong(other.value());
  }

  @Override
  public Long value() {
    return max;
  }
}
