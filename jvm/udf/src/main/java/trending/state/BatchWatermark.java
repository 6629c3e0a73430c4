package trending.state;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Spark function {@code trending_batch_watermark(job) -> bigint}: the watermark the driver set
 * for the running micro-batch of {@code job} ({@link BatchParams}), null before the first event.
 */
public final class BatchWatermark implements UDF1<String, Long> {
  private static final long serialVersionUID = 1L;

  @Override
  public Long call(String job) {
    return BatchParams.current(job).watermarkMs();
  }
}
