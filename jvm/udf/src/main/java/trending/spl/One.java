package trending.spl;

/** A reusable view of one tuple: the tuple an insertion or eviction event concerns. */
final class One<R> implements Tuples<R> {
  private R record;

  One<R> of(R value) {
    record = value;
    return this;
  }

  @Override
  public int size() {
    return 1;
  }

  @Override
  public R get(int index) {
    if (index != 0) {
      throw new IndexOutOfBoundsException(index);
    }
    return record;
  }
}
