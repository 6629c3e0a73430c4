package trending.udf;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Spark function {@code hashtag_keys(text) -> array<string>}: the distinct hashtag keys of a
 * tweet ({@code casefold(NFKC(tag))}, in order of first appearance), empty for a null text.
 *
 * <p>Register it from Python with {@code spark.udf.registerJavaFunction("hashtag_keys",
 * "trending.udf.HashtagKeys", ArrayType(StringType()))}; Spark converts the returned
 * {@code String[]} to {@code array<string>}. The rule is documented on {@link Hashtags}.
 */
public final class HashtagKeys implements UDF1<String, String[]> {
  private static final long serialVersionUID = 1L;

  @Override
  public String[] call(String text) {
    return Hashtags.keys(text);
  }
}
