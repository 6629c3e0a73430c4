package trending.udf;

import com.twitter.twittertext.Extractor;
import com.twitter.twittertext.Regex;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.regex.Matcher;

/**
 * Hashtags as Twitter counts them (the rule of twitter-text 3 {@code extractHashtags}), found
 * by a hand-written scanner; the same rule as {@code trending.text.hashtags}.
 *
 * <p>A hashtag is {@code #} or {@code ＃} followed by a maximal run of letters, marks, decimal
 * digits and a few joiners and signs, holding at least one letter or mark; the {@code #} starts the
 * text or follows a character that is neither {@code &} nor such a character (U+FE0E and U+FE0F
 * are allowed unless they end a rejected run), and is not followed by U+FE0F or U+20E3; the run is
 * not followed by {@code #}, {@code ＃} or {@code ://}; and the hashtag does not overlap a URL that
 * starts before it. Its key is {@code casefold(NFKC(tag))}.
 *
 * <p>The scan of the hashtag characters is linear in the text. The URLs are found as
 * twitter-text finds them (its {@code VALID_URL} pattern and host checks), whose backtracking
 * can take time far beyond linear on crafted text (e.g. {@code "-a" * n + ".x/#tag"}); {@link
 * #spans(String, long)} bounds it to a number of regex steps per character of the text.
 */
public final class Hashtags {
  private static final int[] NO_SPANS = new int[0];
  private static final String[] NO_STRINGS = new String[0];
  /** No bound on the URL scan. */
  public static final long UNBOUNDED = Long.MAX_VALUE;
  /** A text shorter than this gets the URL scan budget of a text this long. */
  private static final int MIN_BUDGET_CHARS = 64;
  /**
   * Segments longer than this are scanned for URLs on a thread with a {@link #DEEP_STACK}: the
   * regex recurses once per repetition of a group (e.g. {@code "(b)"} in a URL path), and on a
   * default 1 MB stack about 3,000 characters of {@code "a(b)a(b)..."} overflow it.
   */
  static final int SHALLOW_SEGMENT = 1_000;
  /** Enough for the regex's recursion over about 100,000 characters. */
  private static final long DEEP_STACK = 128L << 20;
  private static final ExecutorService DEEP =
      Executors.newCachedThreadPool(
          task -> {
            Thread thread = new Thread(null, task, "hashtag-url-scan", DEEP_STACK);
            thread.setDaemon(true);
            return thread;
          });

  private Hashtags() {}

  /** Thrown when the URL scan of a text would take more steps than its budget allows. */
  public static final class ScanBudgetExceeded extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ScanBudgetExceeded() {
      super("the URL scan exceeds its budget", null, false, false);
    }
  }

  /**
   * The hashtags of {@code text} as {@code [start0, end0, start1, end1, ...]}: {@code start} is
   * the index of the {@code #}, {@code end} the end of the tag, both in UTF-16 units.
   */
  public static int[] spans(String text) {
    return spans(text, UNBOUNDED);
  }

  /**
   * {@link #spans(String)}, with the URL scan cut off after {@code stepsPerChar} character reads
   * of the regex per character of {@code text} (of at least 64 characters): {@link
   * ScanBudgetExceeded} then.
   */
  public static int[] spans(String text, long stepsPerChar) {
    int n = text.length();
    int half = text.indexOf('#');
    int full = text.indexOf('\uFF03');
    if (half < 0 && full < 0) {
      return NO_SPANS;
    }
    int[] spans = NO_SPANS;
    int count = 0;
    int consumed = -1;
    boolean[] suspect = null;
    int from = 0;
    while (true) {
      if (half >= 0 && half < from) {
        half = text.indexOf('#', from);
      }
      if (full >= 0 && full < from) {
        full = text.indexOf('\uFF03', from);
      }
      int hash = half < 0 ? full : full < 0 ? half : Math.min(half, full);
      if (hash < 0) {
        break;
      }
      from = hash + 1;
      if (hash == consumed || !validBefore(text, hash) || from >= n) {
        continue;
      }
      char first = text.charAt(from);
      if (first == '\uFE0F' || first == '\u20E3') {
        continue;
      }
      int end = from;
      boolean letter = false;
      while (end < n) {
        char c = text.charAt(end);
        int cls;
        int width = 1;
        if (Character.isHighSurrogate(c)
            && end + 1 < n
            && Character.isLowSurrogate(text.charAt(end + 1))) {
          cls = HashtagTables.classOf(Character.toCodePoint(c, text.charAt(end + 1)));
          width = 2;
        } else {
          cls = HashtagTables.classOf(c);
        }
        if (cls == HashtagTables.NONE) {
          break;
        }
        letter |= cls == HashtagTables.LETTER;
        end += width;
      }
      if (!letter) {
        continue;
      }
      from = end;
      if (end < n) {
        char c = text.charAt(end);
        if (c == '#' || c == '\uFF03' || text.startsWith("://", end)) {
          consumed = end;
          continue;
        }
      }
      if (count == spans.length) {
        spans = Arrays.copyOf(spans, Math.max(8, 2 * count));
      }
      if (hash > 0 && !HashtagTables.notInUrl(text.charAt(hash - 1))) {
        if (suspect == null) {
          suspect = new boolean[spans.length / 2];
        } else if (suspect.length <= count / 2) {
          suspect = Arrays.copyOf(suspect, spans.length / 2);
        }
        suspect[count / 2] = true;
      }
      spans[count++] = hash;
      spans[count++] = end;
    }
    if (count == 0) {
      return NO_SPANS;
    }
    if (suspect != null && text.indexOf('.') >= 0) {
      long chars = Math.max(MIN_BUDGET_CHARS, n);
      long budget = stepsPerChar >= UNBOUNDED / chars ? UNBOUNDED : stepsPerChar * chars;
      return dropUrlOverlaps(text, spans, count, suspect, new long[] {budget});
    }
    return count == spans.length ? spans : Arrays.copyOf(spans, count);
  }

  /** The distinct keys of the hashtags of {@code text}, in order of first appearance. */
  public static String[] keys(String text) {
    if (text == null) {
      return NO_STRINGS;
    }
    int[] spans = spans(text);
    int tags = spans.length / 2;
    if (tags == 0) {
      return NO_STRINGS;
    }
    String[] keys = new String[tags];
    int count = 0;
    Set<String> seen = tags > 8 ? new HashSet<>() : null;
    for (int i = 0; i < tags; i++) {
      String key = key(text, spans[2 * i] + 1, spans[2 * i + 1]);
      boolean fresh;
      if (seen != null) {
        fresh = seen.add(key);
      } else {
        fresh = true;
        for (int k = 0; k < count; k++) {
          if (keys[k].equals(key)) {
            fresh = false;
            break;
          }
        }
      }
      if (fresh) {
        keys[count++] = key;
      }
    }
    return count == tags ? keys : Arrays.copyOf(keys, count);
  }

  /** The counting key of a tag: NFKC-normalized, then case-folded as Python's casefold. */
  public static String key(String tag) {
    return key(tag, 0, tag.length());
  }

  private static String key(String text, int from, int to) {
    boolean upper = false;
    for (int i = from; i < to; i++) {
      char c = text.charAt(i);
      if (c >= 0x80) {
        String tag = text.substring(from, to);
        return HashtagTables.casefold(Normalizer.normalize(tag, Normalizer.Form.NFKC));
      }
      upper |= c >= 'A' && c <= 'Z';
    }
    if (!upper) {
      return text.substring(from, to);
    }
    char[] lower = new char[to - from];
    for (int i = from; i < to; i++) {
      char c = text.charAt(i);
      lower[i - from] = c >= 'A' && c <= 'Z' ? (char) (c + ('a' - 'A')) : c;
    }
    return new String(lower);
  }

  /** True if a hashtag may start with the hash sign at {@code hash} (given its predecessor). */
  private static boolean validBefore(String text, int hash) {
    if (hash == 0) {
      return true;
    }
    char c = text.charAt(hash - 1);
    if (c == '&') {
      return false;
    }
    if (c == '\uFE0E' || c == '\uFE0F') {
      return true;
    }
    if (Character.isLowSurrogate(c)
        && hash >= 2
        && Character.isHighSurrogate(text.charAt(hash - 2))) {
      int cp = Character.toCodePoint(text.charAt(hash - 2), c);
      return HashtagTables.classOf(cp) == HashtagTables.NONE;
    }
    return HashtagTables.classOf(c) == HashtagTables.NONE;
  }

  /**
   * Drop the hashtags twitter-text drops after merging them with the URL entities: ordered by
   * start (hashtags first on ties), an entity is dropped when the last kept one ends after its
   * start. No entity contains a segment break ({@link HashtagTables#isSegmentBreak}), so this is
   * done per segment, only for segments with a suspect hashtag (whose {@code #} follows a
   * character URLs may contain) and a {@code .}.
   */
  private static int[] dropUrlOverlaps(
      String text, int[] spans, int count, boolean[] suspect, long[] budget) {
    int n = text.length();
    boolean[] drop = null;
    int segmentEnd = -1;
    for (int k = 0; k < count; k += 2) {
      if (k / 2 >= suspect.length || !suspect[k / 2] || spans[k] < segmentEnd) {
        continue;
      }
      int segmentStart = spans[k];
      while (segmentStart > 0 && !HashtagTables.isSegmentBreak(text.charAt(segmentStart - 1))) {
        segmentStart--;
      }
      segmentEnd = spans[k + 1];
      while (segmentEnd < n && !HashtagTables.isSegmentBreak(text.charAt(segmentEnd))) {
        segmentEnd++;
      }
      String segment = text.substring(segmentStart, segmentEnd);
      if (segment.indexOf('.') < 0) {
        continue;
      }
      List<int[]> urls = urlSpans(segment, budget);
      if (urls.isEmpty()) {
        continue;
      }
      int h = k;
      while (h >= 2 && spans[h - 2] >= segmentStart) {
        h -= 2;
      }
      int u = 0;
      int lastEnd = -1;
      while ((h < count && spans[h] < segmentEnd) || u < urls.size()) {
        boolean hashtagNext =
            u == urls.size()
                || (h < count
                    && spans[h] < segmentEnd
                    && spans[h] <= urls.get(u)[0] + segmentStart);
        int start;
        int end;
        if (hashtagNext) {
          start = spans[h];
          end = spans[h + 1];
        } else {
          start = urls.get(u)[0] + segmentStart;
          end = urls.get(u)[1] + segmentStart;
        }
        if (lastEnd > start) {
          if (hashtagNext) {
            if (drop == null) {
              drop = new boolean[count / 2];
            }
            drop[h / 2] = true;
          }
        } else {
          lastEnd = end;
        }
        if (hashtagNext) {
          h += 2;
        } else {
          u++;
        }
      }
    }
    if (drop == null) {
      return count == spans.length ? spans : Arrays.copyOf(spans, count);
    }
    int[] kept = new int[count];
    int keptCount = 0;
    for (int k = 0; k < count; k += 2) {
      if (!drop[k / 2]) {
        kept[keptCount++] = spans[k];
        kept[keptCount++] = spans[k + 1];
      }
    }
    return Arrays.copyOf(kept, keptCount);
  }

  /**
   * The {@code [start, end)} spans of the URLs of {@code text}, as twitter-text's {@code
   * Extractor.extractURLsWithIndices} finds them (URLs without a protocol included), reading
   * the text through a {@link Budgeted} view that stops the scan when {@code budget[0]} reads
   * are spent.
   */
  static List<int[]> urlSpans(String text, long[] budget) {
    if (text.length() <= SHALLOW_SEGMENT) {
      return scanUrls(text, budget);
    }
    Future<List<int[]>> scan = DEEP.submit(() -> scanUrls(text, budget));
    try {
      return scan.get();
    } catch (InterruptedException e) {
      scan.cancel(true);
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while finding the URLs of a text", e);
    } catch (ExecutionException e) {
      if (e.getCause() instanceof RuntimeException cause) {
        throw cause;
      }
      if (e.getCause() instanceof Error cause) {
        throw cause;
      }
      throw new IllegalStateException(e.getCause());
    }
  }

  private static List<int[]> scanUrls(String text, long[] budget) {
    List<int[]> urls = new ArrayList<>();
    Matcher matcher = Regex.VALID_URL.matcher(new Budgeted(text, budget));
    while (matcher.find()) {
      String protocol = matcher.group(Regex.VALID_URL_GROUP_PROTOCOL);
      if ((protocol == null || protocol.isEmpty())
          && Regex.INVALID_URL_WITHOUT_PROTOCOL_MATCH_BEGIN
              .matcher(matcher.group(Regex.VALID_URL_GROUP_BEFORE))
              .matches()) {
        continue;
      }
      String url = matcher.group(Regex.VALID_URL_GROUP_URL);
      int start = matcher.start(Regex.VALID_URL_GROUP_URL);
      int end = matcher.end(Regex.VALID_URL_GROUP_URL);
      Matcher tco = Regex.VALID_TCO_URL.matcher(url);
      if (tco.find()) {
        if (tco.group(1).length() > Extractor.MAX_TCO_SLUG_LENGTH) {
          continue;
        }
        url = tco.group(0);
        end = start + url.length();
      }
      String host = matcher.group(Regex.VALID_URL_GROUP_DOMAIN);
      if (Extractor.isValidHostAndLength(url.length(), protocol, host)) {
        urls.add(new int[] {start, end});
      }
    }
    return urls;
  }

  /** A read-only view of a string whose {@link #charAt} spends one unit of a shared budget. */
  private static final class Budgeted implements CharSequence {
    private final String text;
    private final long[] budget;

    Budgeted(String text, long[] budget) {
      this.text = text;
      this.budget = budget;
    }

    @Override
    public char charAt(int index) {
      if (--budget[0] < 0) {
        throw new ScanBudgetExceeded();
      }
      return text.charAt(index);
    }

    @Override
    public int length() {
      return text.length();
    }

    @Override
    public CharSequence subSequence(int start, int end) {
      return text.substring(start, end);
    }

    @Override
    public String toString() {
      return text;
    }
  }
}
