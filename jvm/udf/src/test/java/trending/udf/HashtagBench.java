package trending.udf;

import com.twitter.twittertext.Extractor;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Micro-benchmark (single thread): {@link HashtagKeys} against twitter-text's {@code
 * extractHashtags} on the same texts. Run by {@code bench/hashtags_bench.py}.
 *
 * <p>Usage: {@code java trending.udf.HashtagBench TEXTS SECONDS}; TEXTS holds big-endian u32
 * byte lengths and UTF-8 texts. Prints one line per contender: {@code name tweets_per_second
 * tags_seen}.
 */
public final class HashtagBench {
  private HashtagBench() {}

  public static void main(String[] args) throws IOException {
    List<String> texts = new ArrayList<>();
    try (DataInputStream in =
        new DataInputStream(new BufferedInputStream(new FileInputStream(args[0])))) {
      while (true) {
        int length;
        try {
          length = in.readInt();
        } catch (EOFException end) {
          break;
        }
        byte[] bytes = new byte[length];
        in.readFully(bytes);
        texts.add(new String(bytes, StandardCharsets.UTF_8));
      }
    }
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 3.0;
    String[] all = texts.toArray(new String[0]);
    HashtagKeys udf = new HashtagKeys();
    Extractor extractor = new Extractor();

    run("hashtag_keys_udf", all, seconds, t -> udf.call(t).length);
    run("twitter_text_extractHashtags", all, seconds, t -> extractor.extractHashtags(t).size());
    run("hashtag_keys_udf", all, seconds, t -> udf.call(t).length);
  }

  private interface Work {
    int apply(String text);
  }

  private static void run(String name, String[] texts, double seconds, Work work) {
    long sink = 0;
    // Warm-up: one pass, then at least a second of work.
    long warmEnd = System.nanoTime() + 1_000_000_000L;
    do {
      for (String text : texts) {
        sink += work.apply(text);
      }
    } while (System.nanoTime() < warmEnd);
    long done = 0;
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    long now;
    do {
      for (String text : texts) {
        sink += work.apply(text);
      }
      done += texts.length;
      now = System.nanoTime();
    } while (now < end);
    double rate = done / ((now - start) / 1e9);
    System.out.printf("%s %.0f %d%n", name, rate, sink);
  }
}
