package trending.spl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.encoders.RowEncoder$;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The Spark step of {@code trending.spl_window} on the JVM core: {@link SplWindowProcessor} run
 * by {@code transformWithState}, one grouping key per window key (or one for a whole window),
 * output in append mode.
 *
 * <p>{@link #apply} takes the DataFrame as the Python side prepared it (the event time as epoch
 * milliseconds in a column of its own, with Spark's watermark) and the options as JSON:
 *
 * <pre>
 * {"spec": SPEC (WindowSpec.to_jvm_json()), "key": K, "columns": [C, ...] (the record columns),
 *  "order_by": [C, ...], "time_mode": "none" | "event" | "processing", "time_column": T | null,
 *  "whole": B, "include_window": B, "kinds": [E, ...] | null, "schema": OUTPUT (Spark JSON)}
 * </pre>
 *
 * <p>Grouping key: the key column, a timestamp as its epoch milliseconds (as the tuples hold
 * it), a float's NaN as null (the same window as null, as in Python); a whole window groups all
 * rows under the constant 0.
 */
public final class SplWindowStep {
  /** The grouping column (the Python runner reserves the name). */
  static final String GROUP = "spl_runner_window";
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private SplWindowStep() {}

  /** The typed window events of {@code df} (see the class doc). */
  public static Dataset<Row> apply(Dataset<Row> df, String options) {
    JsonNode o = parse(options);
    List<String> columns = strings(o.get("columns"));
    String key = o.get("key").asText();
    String timeMode = o.get("time_mode").asText();
    boolean whole = o.get("whole").asBoolean();
    StructType output = (StructType) DataType.fromJson(o.get("schema").asText());
    SparkRecords records = new SparkRecords(df.schema(), columns);
    int keyColumn = columns.indexOf(key);
    ValueType keyType = records.types[keyColumn];
    Dataset<Row> grouped = df.withColumn(GROUP, whole ? functions.lit(0) : group(key, keyType));
    StructType schema = grouped.schema();
    int[] positions = columns.stream().mapToInt(schema::fieldIndex).toArray();
    JsonNode time = o.get("time_column");
    int timePosition = time == null || time.isNull() ? -1 : schema.fieldIndex(time.asText());
    int[] sort = strings(o.get("order_by")).stream().mapToInt(columns::indexOf).toArray();
    EventRows.Shape shape = new EventRows.Shape(keyType, o.get("include_window").asBoolean(),
        kinds(o.get("kinds")), summaries(o.get("spec").asText(), output));
    SplWindowProcessor processor = new SplWindowProcessor(o.get("spec").asText(), records,
        positions, timePosition, sort, timeMode, whole, keyColumn, shape);
    StructType keySchema = new StructType(new StructField[] {schema.apply(GROUP)});
    return grouped
        .groupBy(functions.col(GROUP))
        .as(Encoders.row(keySchema), Encoders.row(schema))
        .transformWithState(processor, timeMode(timeMode), OutputMode.Append(),
            RowEncoder$.MODULE$.encoderFor(output, true));
  }

  private static Column group(String key, ValueType type) {
    Column column = functions.col(key);
    return switch (type) {
      case TIMESTAMP -> functions.unix_millis(column);
      case FLOAT, DOUBLE -> functions.when(functions.isnan(column), functions.lit(null))
          .otherwise(column);
      default -> column;
    };
  }

  private static TimeMode timeMode(String mode) {
    return switch (mode) {
      case "none" -> TimeMode.None();
      case "event" -> TimeMode.EventTime();
      case "processing" -> TimeMode.ProcessingTime();
      default -> throw new IllegalArgumentException("time_mode: " + mode);
    };
  }

  /** Which event kinds are kept, by ordinal ({@code null}: all). */
  private static boolean[] kinds(JsonNode names) {
    boolean[] keep = new boolean[EventKind.values().length];
    List<String> wanted = names == null || names.isNull() ? null : strings(names);
    for (EventKind kind : EventKind.values()) {
      keep[kind.ordinal()] = wanted == null || wanted.contains(kind.json());
    }
    return keep;
  }

  /** The summaries' kinds in the output's order, or null when it has no summary column. */
  private static Summarizer.Kind[] summaries(String spec, StructType output) {
    if (!Arrays.asList(output.fieldNames()).contains("summary")) {
      return null;
    }
    return SpecJson.read(spec).summarizers().stream()
        .map(Summarizer::kind).toArray(Summarizer.Kind[]::new);
  }

  private static List<String> strings(JsonNode array) {
    List<String> out = new ArrayList<>();
    if (array != null) {
      array.forEach(item -> out.add(item.asText()));
    }
    return out;
  }

  private static JsonNode parse(String options) {
    try {
      return MAPPER.readTree(options);
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("options are not JSON: " + e.getOriginalMessage(), e);
    }
  }
}
