package trending.udf;

import org.apache.spark.sql.api.java.UDF4;

/**
 * Spark function {@code hashtag_bounds(text, max_hashtags, max_hashtag_chars, url_scan_steps)
 * -> string}: why a tweet's hashtags are beyond the job's bounds, or null when they are within.
 *
 * <p>A tweet is beyond them when it has more than {@code max_hashtags} hashtags, a hashtag of
 * more than {@code max_hashtag_chars} characters (code points, without the {@code #}), or when
 * finding its URLs takes more than {@code url_scan_steps} regex steps per character (see {@link
 * Hashtags#spans(String, long)}). The reason names the job's flag of the bound it breaks; {@code
 * trending.metrics} labels dead letters by that flag.
 */
public final class HashtagBounds implements UDF4<String, Integer, Integer, Long, String> {
  private static final long serialVersionUID = 1L;

  @Override
  public String call(String text, Integer maxHashtags, Integer maxHashtagChars, Long steps) {
    return text == null ? null : reason(text, maxHashtags, maxHashtagChars, steps);
  }

  /** Why {@code text} is beyond the bounds, or null. */
  public static String reason(String text, int maxHashtags, int maxHashtagChars, long steps) {
    int[] spans;
    try {
      spans = Hashtags.spans(text, steps);
    } catch (Hashtags.ScanBudgetExceeded e) {
      return "over --max-url-scan-steps: finding the URLs of this text takes more than "
          + steps + " steps per character";
    } catch (StackOverflowError e) {
      return "over --max-url-scan-steps: finding the URLs of this text nests deeper than the"
          + " scanner's stack";
    }
    int tags = spans.length / 2;
    if (tags > maxHashtags) {
      return "over --max-hashtags: " + tags + " hashtags (at most " + maxHashtags + ")";
    }
    for (int i = 0; i < spans.length; i += 2) {
      int chars = text.codePointCount(spans[i] + 1, spans[i + 1]);
      if (chars > maxHashtagChars) {
        return "over --max-hashtag-chars: a hashtag of " + chars + " characters (at most "
            + maxHashtagChars + ")";
      }
    }
    return null;
  }
}
