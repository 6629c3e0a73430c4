package trending.sensors;

import java.io.Serializable;

/**
 * Square cells of side {@code c} over the plane: point {@code (x, y)} lies in cell
 * {@code (floor(x / c), floor(y / c))}, packed in a long as {@code cx << 32 | cy}. A query at
 * {@code (x, y)} with distance {@code d} can only match readings in the cells its square
 * {@code [x - d, x + d] x [y - d, y + d]} touches (widened by a rounding margin), cut to the
 * extent of the cells readings were ever put in.
 */
public final class Grid implements Serializable {
  private static final long serialVersionUID = 1L;
  private static final double MARGIN = 1e-9;
  private final double size;

  public Grid(double size) {
    if (!(size > 0) || Double.isInfinite(size)) {
      throw new IllegalArgumentException("cell size must be a positive number, not " + size);
    }
    this.size = size;
  }

  /** Cell coordinate of {@code value} along one axis. */
  public int coordinate(double value) {
    double scaled = Math.floor(value / size);
    return (int) Math.max(Integer.MIN_VALUE, Math.min(Integer.MAX_VALUE, scaled));
  }

  public long cell(double x, double y) {
    return pack(coordinate(x), coordinate(y));
  }

  static long pack(int cx, int cy) {
    return ((long) cx << 32) | (cy & 0xffffffffL);
  }

  /** Lowest cell coordinate a query's square touches along one axis. */
  int low(double center, double distance) {
    return coordinate(center - distance - margin(center, distance));
  }

  /** Highest cell coordinate a query's square touches along one axis. */
  int high(double center, double distance) {
    return coordinate(center + distance + margin(center, distance));
  }

  /** Covers the rounding of {@code center +- distance}: a reading at exactly the distance counts. */
  private double margin(double center, double distance) {
    return (Math.abs(center) + distance + size) * MARGIN;
  }
}
