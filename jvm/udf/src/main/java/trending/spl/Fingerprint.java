package trending.spl;

import java.nio.charset.StandardCharsets;

/**
 * A 64-bit FNV-1a hash of a text's UTF-8 bytes: the same in any JVM, so a state value can say
 * what it was written for (input columns, a spec) and a restart can tell when that changed.
 */
public final class Fingerprint {
  private Fingerprint() {}

  /** The fingerprint of {@code text}. */
  public static long of(String text) {
    long hash = 0xcbf29ce484222325L;
    for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
      hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
    }
    return hash;
  }
}
