package trending.udf;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Character classes and case folding of the hashtag rule, loaded from the resource
 * {@code hashtag-tables.bin} that {@code jvm/udf/gen_tables.py} generates from Python's Unicode
 * data, so the JVM agrees with {@code trending.text.hashtags} whatever Unicode version it has.
 */
final class HashtagTables {
  static final byte NONE = 0;
  static final byte LETTER = 1;
  static final byte NUMERAL = 2;

  /** Unicode version of the Python that generated the tables. */
  static final String UNICODE_VERSION;

  private static final byte[] BMP = new byte[0x10000];
  private static final int[] ASTRAL_FIRST;
  private static final int[] ASTRAL_LAST;
  private static final byte[] ASTRAL_CLASS;

  /** Simple folds of BMP chars; {@link #FOLD_ELSEWHERE} means "look in {@link #FOLDS}". */
  private static final char[] FOLD_BMP = new char[0x10000];
  private static final char FOLD_ELSEWHERE = '\uFFFF';
  /** Folds of astral code points and multi-unit folds of BMP chars. */
  private static final Map<Integer, String> FOLDS = new HashMap<>();

  private static final boolean[] NOT_IN_URL;

  static {
    try (InputStream raw = HashtagTables.class.getResourceAsStream("hashtag-tables.bin")) {
      if (raw == null) {
        throw new IllegalStateException(
            "trending/udf/hashtag-tables.bin is missing from the class path: build the jar with "
                + "jvm/udf/build.sh (make jars)");
      }
      DataInputStream in = new DataInputStream(new BufferedInputStream(raw));
      byte[] magic = new byte[4];
      in.readFully(magic);
      if (magic[0] != 'H' || magic[1] != 'T' || magic[2] != 'T' || magic[3] != '1') {
        throw new IllegalStateException("hashtag-tables.bin: unknown format");
      }
      UNICODE_VERSION = in.readUTF();

      int ranges = in.readInt();
      int[] first = new int[ranges];
      int[] last = new int[ranges];
      byte[] cls = new byte[ranges];
      int astral = 0;
      for (int i = 0; i < ranges; i++) {
        int a = in.readInt();
        int b = in.readInt();
        byte c = in.readByte();
        for (int cp = a; cp <= Math.min(b, 0xFFFF); cp++) {
          BMP[cp] = c;
        }
        if (b > 0xFFFF) {
          first[astral] = Math.max(a, 0x10000);
          last[astral] = b;
          cls[astral] = c;
          astral++;
        }
      }
      ASTRAL_FIRST = Arrays.copyOf(first, astral);
      ASTRAL_LAST = Arrays.copyOf(last, astral);
      ASTRAL_CLASS = Arrays.copyOf(cls, astral);

      for (int cp = 0; cp < 0x10000; cp++) {
        FOLD_BMP[cp] = (char) cp;
      }
      int folds = in.readInt();
      for (int i = 0; i < folds; i++) {
        int cp = in.readInt();
        char[] units = new char[in.readUnsignedShort()];
        for (int k = 0; k < units.length; k++) {
          units[k] = in.readChar();
        }
        if (cp < 0x10000 && units.length == 1 && units[0] != FOLD_ELSEWHERE) {
          FOLD_BMP[cp] = units[0];
        } else {
          FOLDS.put(cp, new String(units));
          if (cp < 0x10000) {
            FOLD_BMP[cp] = FOLD_ELSEWHERE;
          }
        }
      }

      int noUrl = in.readInt();
      char[] chars = new char[noUrl];
      int max = 0;
      for (int i = 0; i < noUrl; i++) {
        chars[i] = in.readChar();
        max = Math.max(max, chars[i]);
      }
      NOT_IN_URL = new boolean[max + 1];
      for (char c : chars) {
        NOT_IN_URL[c] = true;
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read trending/udf/hashtag-tables.bin", e);
    }
  }

  private HashtagTables() {}

  /** {@link #LETTER}, {@link #NUMERAL} or {@link #NONE}. */
  static byte classOf(int cp) {
    if (cp < 0x10000) {
      return BMP[cp];
    }
    int lo = 0;
    int hi = ASTRAL_FIRST.length - 1;
    while (lo <= hi) {
      int mid = (lo + hi) >>> 1;
      if (cp < ASTRAL_FIRST[mid]) {
        hi = mid - 1;
      } else if (cp > ASTRAL_LAST[mid]) {
        lo = mid + 1;
      } else {
        return ASTRAL_CLASS[mid];
      }
    }
    return NONE;
  }

  /** True if no URL can contain {@code c}. */
  static boolean notInUrl(char c) {
    return c < NOT_IN_URL.length && NOT_IN_URL[c];
  }

  /** True if neither a URL nor a hashtag can contain {@code c}. */
  static boolean isSegmentBreak(char c) {
    return c < NOT_IN_URL.length && NOT_IN_URL[c] && BMP[c] == NONE;
  }

  /** Python's {@code str.casefold()} of {@code s}. */
  static String casefold(String s) {
    int n = s.length();
    int i = 0;
    while (i < n) {
      char c = s.charAt(i);
      if (Character.isSurrogate(c) || FOLD_BMP[c] != c) {
        break;
      }
      i++;
    }
    if (i == n) {
      return s;
    }
    StringBuilder out = new StringBuilder(n + 8);
    out.append(s, 0, i);
    while (i < n) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
        int cp = Character.toCodePoint(c, s.charAt(i + 1));
        String folded = FOLDS.get(cp);
        if (folded == null) {
          out.append(c).append(s.charAt(i + 1));
        } else {
          out.append(folded);
        }
        i += 2;
        continue;
      }
      char f = FOLD_BMP[c];
      if (f == FOLD_ELSEWHERE && c != FOLD_ELSEWHERE) {
        out.append(FOLDS.get((int) c));
      } else {
        out.append(f);
      }
      i++;
    }
    return out.toString();
  }
}
