import com.twitter.twittertext.Extractor;
import com.twitter.twittertext.Regex;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import trending.udf.HashtagKeys;
import trending.udf.Hashtags;

/**
 * Test harness: runs texts through twitter-text (the oracle) and through the project's Spark
 * function, so pytest can compare them in bulk.
 *
 * <p>{@code java HashtagOracle compare|urls} reads texts from stdin, each as a big-endian u32
 * byte length and UTF-8 bytes, and writes per text (same framing for strings, indices in code
 * points):
 *
 * <ul>
 *   <li>{@code compare}: twitter-text's hashtags (u32 n, then n times start, end, tag); the
 *       scanner's spans (u32 n, then n times start, end); {@code HashtagKeys.call} (u32 n, n keys);
 *   <li>{@code urls}: twitter-text's URL entities (u32 n, then n times start, end).
 * </ul>
 *
 * <p>{@code java HashtagOracle classes} prints, as text lines {@code first last class}, the ranges
 * of code points twitter-text's hashtag pattern takes as letters (1) or only as other hashtag
 * characters (2), then {@code undefined first last} for code points this JVM does not know.
 */
public final class HashtagOracle {
  private HashtagOracle() {}

  public static void main(String[] args) throws IOException {
    String mode = args.length > 0 ? args[0] : "compare";
    if (mode.equals("classes")) {
      classes();
      return;
    }
    Extractor extractor = new Extractor();
    HashtagKeys udf = new HashtagKeys();
    DataInputStream in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
    DataOutputStream out = new DataOutputStream(new BufferedOutputStream(System.out, 1 << 16));
    while (true) {
      int length;
      try {
        length = in.readInt();
      } catch (EOFException end) {
        break;
      }
      byte[] bytes = new byte[length];
      in.readFully(bytes);
      String text = new String(bytes, StandardCharsets.UTF_8);
      if (mode.equals("urls")) {
        List<Extractor.Entity> urls = extractor.extractURLsWithIndices(text);
        out.writeInt(urls.size());
        for (Extractor.Entity url : urls) {
          out.writeInt(text.codePointCount(0, url.getStart()));
          out.writeInt(text.codePointCount(0, url.getEnd()));
        }
        continue;
      }
      List<Extractor.Entity> hashtags = extractor.extractHashtagsWithIndices(text);
      out.writeInt(hashtags.size());
      for (Extractor.Entity hashtag : hashtags) {
        out.writeInt(text.codePointCount(0, hashtag.getStart()));
        out.writeInt(text.codePointCount(0, hashtag.getEnd()));
        writeString(out, hashtag.getValue());
      }
      int[] spans = Hashtags.spans(text);
      out.writeInt(spans.length / 2);
      for (int span : spans) {
        out.writeInt(text.codePointCount(0, span));
      }
      String[] keys = udf.call(text);
      out.writeInt(keys.length);
      for (String key : keys) {
        writeString(out, key);
      }
    }
    out.flush();
  }

  private static void writeString(DataOutputStream out, String value) throws IOException {
    byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
    out.writeInt(bytes.length);
    out.write(bytes);
  }

  private static void classes() {
    StringBuilder out = new StringBuilder();
    int runFirst = 0;
    int runClass = 0;
    for (int cp = 0; cp <= 0x110000; cp++) {
      // Undefined code points are skipped (no \p{..} class holds them; the test checks the rest).
      int cls = cp > 0x10FFFF ? -1 : Character.isDefined(cp) ? classOf(cp) : 0;
      if (cls != runClass) {
        if (runClass > 0) {
          out.append(runFirst).append(' ').append(cp - 1).append(' ').append(runClass).append('\n');
        }
        runFirst = cp;
        runClass = cls;
      }
    }
    runFirst = -1;
    for (int cp = 0; cp <= 0x110000; cp++) {
      boolean undefined = cp <= 0x10FFFF && !Character.isDefined(cp);
      if (undefined && runFirst < 0) {
        runFirst = cp;
      } else if (!undefined && runFirst >= 0) {
        out.append("undefined ").append(runFirst).append(' ').append(cp - 1).append('\n');
        runFirst = -1;
      }
    }
    System.out.print(out);
  }

  /** 1 if the hashtag pattern takes {@code cp} as a letter, 2 as another hashtag character. */
  private static int classOf(int cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) {
      return 0;
    }
    String c = new String(Character.toChars(cp));
    // After "_" (a hashtag character but no letter) only a letter completes a hashtag.
    if (Regex.VALID_HASHTAG.matcher("#_" + c).matches()) {
      return 1;
    }
    return Regex.VALID_HASHTAG.matcher("#a" + c).matches() ? 2 : 0;
  }
}
