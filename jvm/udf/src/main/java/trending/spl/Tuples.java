package trending.spl;

/**
 * A read-only view of the tuples an event carries, oldest first. A view is valid only during the
 * {@link WindowEvents#on} call that received it (the window reuses and changes it afterwards):
 * copy what must outlive the call.
 */
public interface Tuples<R> {
  /** The number of tuples. */
  int size();

  /** The tuple at {@code index}, {@code 0 <= index < size()}, oldest first. */
  R get(int index);

  /** No tuples. */
  @SuppressWarnings("unchecked")
  static <R> Tuples<R> empty() {
    return (Tuples<R>) Empty.INSTANCE;
  }

  /** The one view with no tuples. */
  final class Empty implements Tuples<Object> {
    static final Empty INSTANCE = new Empty();

    private Empty() {}

    @Override
    public int size() {
      return 0;
    }

    @Override
    public Object get(int index) {
      throw new IndexOutOfBoundsException(index);
    }
  }
}
