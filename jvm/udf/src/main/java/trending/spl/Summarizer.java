package trending.spl;

/**
 * One tumbling window summarizer: an incremental aggregate named {@code name} over the
 * attribute {@code attribute} ({@code null} for {@code count}); {@code k} for {@code top_k}.
 *
 * <ul>
 *   <li>{@code count}: {@code |W|}; {@code sum}: {@code sum(a(t))}, an integer while every value
 *       is; {@code min}, {@code max}: the first of the smallest / largest values ({@code null}
 *       for an empty window); {@code mean}: {@code sum / |W|} ({@code null} when empty);
 *       {@code top_k}: the {@code k} largest values, largest first.
 * </ul>
 */
public record Summarizer(String name, Kind kind, String attribute, int k) {
  /** The built-in summarizers. */
  public enum Kind {
    COUNT,
    SUM,
    MIN,
    MAX,
    MEAN,
    TOP_K
  }

  public Summarizer {
    if (name == null || kind == null) {
      throw new IllegalArgumentException("a summarizer needs a name and a kind");
    }
    if (kind != Kind.COUNT && (attribute == null || attribute.isEmpty())) {
      throw new IllegalArgumentException("summaries." + name + ": needs an attribute");
    }
    if (kind == Kind.TOP_K && k < 1) {
      throw new IllegalArgumentException("summaries." + name + ": top_k needs k >= 1");
    }
  }
}
