package trending.avro;

/** Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF. */
final class Utf8 {
  private Utf8() {}

  static boolean valid(byte[] b, int from, int to) {
    int i = from;
    while (i < to) {
      int c = b[i] & 0xff;
      if (c < 0x80) {
        i++;
        continue;
      }
      int extra;
      int min;
      if (c >= 0xc2 && c <= 0xdf) {
        extra = 1;
        min = 0x80;
      } else if (c >= 0xe0 && c <= 0xef) {
        extra = 2;
        min = 0x800;
      } else if (c >= 0xf0 && c <= 0xf4) {
        extra = 3;
        min = 0x10000;
      } else {
        return false;
      }
      if (i + extra >= to) {
        return false;
      }
      int code = c & (0x3f >> extra);
      for (int k = 1; k <= extra; k++) {
        int next = b[i + k] & 0xff;
        if ((next & 0xc0) != 0x80) {
          return false;
        }
        code = (code << 6) | (next & 0x3f);
      }
      if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) {
        return false;
      }
      i += extra + 1;
    }
    return true;
  }
}
