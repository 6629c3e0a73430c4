package trending.spl;

/**
 * A tumbling window's summarizers bound to the way its tuples are read: each tuple is looked at
 * once, so a window need not keep its tuples. {@link #open} when a window opens (its first tuple
 * arrives), {@link #add} for every tuple; the state's {@link Summary} view is the result.
 */
final class Summarizers<R> {
  private final Summarizer[] specs;
  private final int[] attributes;
  private final Attributes<R> reader;

  Summarizers(Summarizer[] specs, Attributes<R> reader) {
    this.specs = specs;
    this.reader = reader;
    attributes = new int[specs.length];
    for (int i = 0; i < specs.length; i++) {
      attributes[i] = specs[i].attribute() == null ? -1 : reader.index(specs[i].attribute());
    }
  }

  boolean isEmpty() {
    return specs.length == 0;
  }

  Summarizer[] specs() {
    return specs;
  }

  /** {@link InputError} if a summarizer needs a number {@code record} does not have. */
  void check(R record) {
    for (int i = 0; i < specs.length; i++) {
      int at = attributes[i];
      if (at >= 0 && reader.kind(record, at) < Attributes.INTEGER) {
        throw new InputError(
            "summarized attribute '" + specs[i].attribute() + "' must be a number");
      }
    }
  }

  Summaries open() {
    return new Summaries(specs);
  }

  void add(Summaries state, R record) {
    for (int i = 0; i < specs.length; i++) {
      int at = attributes[i];
      if (at < 0) {
        state.add(i, false, 0);
      } else if (reader.kind(record, at) == Attributes.INTEGER) {
        state.add(i, false, reader.integer(record, at));
      } else {
        state.add(i, true, Numbers.bits(reader.real(record, at)));
      }
    }
  }
}
