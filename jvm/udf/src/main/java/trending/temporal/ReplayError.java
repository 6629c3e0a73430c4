package trending.temporal;

/** An input line the replay cannot use; the message says why (without the line number). */
final class ReplayError extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  ReplayError(String message) {
    super(message);
  }
}
