package trending.spl;

/**
 * An input the window cannot take (a tuple without a delta attribute, time going back). The
 * window is left unchanged when a verb throws this.
 */
public final class InputError extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public InputError(String message) {
    super(message);
  }
}
