package trending.udf;

import org.apache.spark.sql.Column;
import org.apache.spark.sql.api.java.UDF0;
import org.apache.spark.sql.expressions.UserDefinedFunction;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.types.DataTypes;

/**
 * A value fixed for one micro-batch (a watermark, the batch's clock) as a column that Spark's
 * generated code refers to instead of spelling out. A literal would be written into the code
 * ({@code 1795931324757L}), so every batch would generate new code and compile it again (tens
 * of milliseconds a stage, on the thread that runs the batch); this column's code is the same
 * every batch and is compiled once. Deterministic, never null, and not folded by the optimizer.
 */
public final class BatchValue {
  private BatchValue() {}

  /** {@code value} as a {@code bigint} column. */
  public static Column ofLong(long value) {
    UserDefinedFunction constant =
        functions.udf((UDF0<Long>) () -> value, DataTypes.LongType).asNonNullable();
    return constant.apply(new Column[0]);
  }
}
