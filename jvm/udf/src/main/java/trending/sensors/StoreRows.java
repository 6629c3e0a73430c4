package trending.sensors;

import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.StructType;

/** Builds the state store's key and value rows of one schema (one per task: not thread safe). */
final class StoreRows {
  private final UnsafeProjection projection;

  StoreRows(StructType schema) {
    projection = UnsafeProjection.create(schema);
  }

  /** A row of {@code values} (Long, Integer, Double, byte[]); valid until the next call. */
  UnsafeRow of(Object... values) {
    return projection.apply(new GenericInternalRow(values));
  }
}
