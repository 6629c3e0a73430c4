package trending.state;

import java.io.Serializable;

/**
 * Windows {@code [a + n*hop, a + n*hop + size)} and panes of width {@code g = gcd(size, hop)},
 * in milliseconds (the same formulas as {@code trending.windows.sliding}).
 */
public final class SlidingGeometry implements Serializable {
  private static final long serialVersionUID = 1L;
  final long sizeMs;
  final long hopMs;
  final long alignMs;
  final long paneMs;

  public SlidingGeometry(long sizeMs, long hopMs, long alignMs) {
    if (sizeMs <= 0 || hopMs <= 0 || hopMs > sizeMs) {
      throw new IllegalArgumentException(
          "need 0 < hop <= size, got size=" + sizeMs + "ms hop=" + hopMs + "ms");
    }
    this.sizeMs = sizeMs;
    this.hopMs = hopMs;
    this.alignMs = alignMs;
    this.paneMs = gcd(sizeMs, hopMs);
  }

  /** Start of the oldest window holding {@code t}: {@code a + ceil((t - a - size + 1) / hop) * hop}. */
  long firstWindowStart(long t) {
    return alignMs - Math.floorDiv(sizeMs - 1 - (t - alignMs), hopMs) * hopMs;
  }

  /** Start of the newest window holding {@code t}: {@code t - ((t - a) mod hop)}. */
  long lastWindowStart(long t) {
    return t - Math.floorMod(t - alignMs, hopMs);
  }

  /** Start of the pane holding {@code t}: {@code t - ((t - a) mod g)}. */
  long paneStart(long t) {
    return t - Math.floorMod(t - alignMs, paneMs);
  }

  /** End of the newest window holding {@code t}: once the watermark reaches it, t is late. */
  long lastEnd(long t) {
    return lastWindowStart(t) + sizeMs;
  }

  private static long gcd(long a, long b) {
    return b == 0 ? a : gcd(b, a % b);
  }
}
