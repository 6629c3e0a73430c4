package trending.temporal.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.encoders.RowEncoder$;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import trending.temporal.SpecJson;

/**
 * The Spark step of the temporal windows on the JVM core: {@link TemporalKeyProcessor} run by
 * {@code transformWithState}, one grouping key per window key, output in append mode.
 *
 * <p>{@link #apply} takes the decoded events as the Python side prepared them (columns {@code
 * kind, key, id, start_ms, end_ms, value, sync_ms, mark_ms, reason} and, for the job's rows,
 * the record's origin; Spark's watermark on them) and the options as JSON:
 *
 * <pre>
 * {"spec": SPEC (TemporalQuery.to_jvm_json()), "rows": "kafka" | "window",
 *  "invalid": "fail" | "drop", "close": B, "schema": OUTPUT (Spark JSON or DDL)}
 * </pre>
 *
 * <p>{@code close}: the input is a batch DataFrame, all there is; the step runs without event
 * time and a CTI at the end of time follows each key's rows. Grouping key: the key column, a
 * float's NaN as null (the same key as null, as in the Python step).
 */
public final class TemporalStep {
  /** The grouping column (a name no input column has). */
  static final String GROUP = "trending_temporal_key";
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private TemporalStep() {}

  /** Whether the JVM core reads {@code spec} (the normal form); the reason when not, or null. */
  public static String refusal(String spec) {
    try {
      SpecJson.read(spec);
      return null;
    } catch (IllegalArgumentException e) {
      return e.getMessage();
    }
  }

  /** The rows of the temporal query over {@code events} (see the class doc). */
  public static Dataset<Row> apply(Dataset<Row> events, String options) {
    JsonNode o = parse(options);
    String spec = o.get("spec").asText();
    SpecJson.read(spec); // refuse a bad spec here, not in a task
    boolean close = o.get("close").asBoolean();
    String schemaText = o.get("schema").asText();
    StructType output = schemaText.startsWith("{")
        ? (StructType) DataType.fromJson(schemaText) : StructType.fromDDL(schemaText);
    Dataset<Row> grouped = events.withColumn(GROUP, group(events.schema().apply("key")));
    StructType schema = grouped.schema();
    EventColumns columns = new EventColumns(schema);
    OutputRows rows = "kafka".equals(o.get("rows").asText())
        ? new KafkaOutput(output, columns)
        : new WindowOutput(output, columns, "fail".equals(o.path("invalid").asText("fail")));
    TemporalKeyProcessor processor = new TemporalKeyProcessor(spec, columns, rows, close);
    StructType keySchema = new StructType(new StructField[] {schema.apply(GROUP)});
    return grouped
        .groupBy(functions.col(GROUP))
        .as(Encoders.row(keySchema), Encoders.row(schema))
        .transformWithState(processor, close ? TimeMode.None() : TimeMode.EventTime(),
            OutputMode.Append(), RowEncoder$.MODULE$.encoderFor(output, true));
  }

  private static Column group(StructField key) {
    Column column = functions.col(key.name());
    DataType type = key.dataType();
    if (type instanceof DoubleType || type instanceof FloatType) {
      return functions.when(functions.isnan(column), functions.lit(null).cast(type))
          .otherwise(column);
    }
    return column;
  }

  private static JsonNode parse(String options) {
    try {
      return MAPPER.readTree(options);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("temporal step options are not JSON", e);
    }
  }
}
