package trending.state;

import org.apache.spark.sql.api.java.UDF1;

/**
 * Spark function {@code trending_batch_clock(job) -> bigint}: the clock the driver set for the
 * running micro-batch of {@code job} ({@link BatchParams}: Spark's batch timestamp, as {@code
 * current_timestamp()} gives it), null when none was set.
 */
public final class BatchClock implements UDF1<String, Long> {
  private static final long serialVersionUID = 1L;

  @Override
  public Long call(String job) {
    return BatchParams.current(job).clockMs();
  }
}
