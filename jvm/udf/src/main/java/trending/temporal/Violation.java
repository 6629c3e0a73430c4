package trending.temporal;

/**
 * What happens to input behind the CTI: {@code FAIL} raises {@link CtiViolation}, {@code DROP}
 * ignores and counts it, {@code ADJUST} moves the late time up to the CTI (and drops what has no
 * lifetime left).
 */
public enum Violation {
  FAIL,
  DROP,
  ADJUST
}
