package trending.temporal;

/** Input that would change results a CTI already made final (violation policy {@code fail}). */
public final class CtiViolation extends TemporalInputError {
  private static final long serialVersionUID = 1L;

  public CtiViolation(String message) {
    super(message);
  }
}
