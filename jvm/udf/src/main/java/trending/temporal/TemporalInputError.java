package trending.temporal;

/** An input the temporal core cannot use (bad lifetime, unknown edge); the message says why. */
public class TemporalInputError extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;

  public TemporalInputError(String message) {
    super(message);
  }
}
