package trending.spl;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Reads a window spec in its normal form, the JSON that Python's {@code
 * WindowSpec.to_jvm_json()} writes from a spec {@code parse_spec} has already checked: every
 * field explicit, times in integer milliseconds, summaries a list in their order:
 *
 * <pre>
 * {"version": 1, "kind": "tumbling" | "sliding", "partition_by": A | null,
 *  "evict": P, "trigger": P | null,
 *  "partition_eviction": null | {"limit": "age" | "count" | "tuples", "value": N, "select": "lru"},
 *  "summaries": [{"name": S, "summary": "count" | "sum" | "min" | "max" | "mean" | "top_k",
 *                 "attribute": A | null, "k": K | null}, ...],
 *  "keep_tuples": B, "empty_window_events": B}
 * P = {"policy": "count", "size": N} | {"policy": "delta", "attribute": A, "size": X}
 *   | {"policy": "time", "period_ms": N} | {"policy": "punct"}
 * </pre>
 *
 * <p>{@code "select": "operator"} is refused: an operator-defined selector is Python code. A
 * Spark processor keeps the spec as this text (a string travels to the executors) and reads it
 * once when it starts.
 */
public final class SpecJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private SpecJson() {}

  /** The configuration {@code json} describes; {@link IllegalArgumentException} if it cannot. */
  public static WindowConfig read(String json) {
    try {
      return read(MAPPER.readTree(json));
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("window spec is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** The configuration the parsed spec {@code spec} describes. */
  public static WindowConfig read(JsonNode spec) {
    if (spec == null || !spec.isObject() || spec.path("version").asInt() != 1) {
      throw new IllegalArgumentException("not a version 1 window spec in normal form: " + spec);
    }
    String kind = text(spec, "kind");
    WindowConfig.Kind windowKind = switch (kind) {
      case "tumbling" -> WindowConfig.Kind.TUMBLING;
      case "sliding" -> WindowConfig.Kind.SLIDING;
      default -> throw new IllegalArgumentException("kind: must be tumbling or sliding: " + kind);
    };
    return new WindowConfig(
        windowKind,
        policy(spec.get("evict"), "evict"),
        policy(spec.get("trigger"), "trigger"),
        optionalText(spec, "partition_by"),
        eviction(spec.get("partition_eviction")),
        summarizers(spec.get("summaries")),
        flag(spec, "keep_tuples"),
        flag(spec, "empty_window_events"));
  }

  private static Policy policy(JsonNode node, String path) {
    if (node == null || node.isNull()) {
      return null;
    }
    return switch (text(node, "policy")) {
      case "count" -> new Policy.Count(integer(node, "size"));
      case "delta" -> new Policy.Delta(text(node, "attribute"), number(node, "size"));
      case "time" -> new Policy.Time(integer(node, "period_ms"));
      case "punct" -> new Policy.Punct();
      default -> throw new IllegalArgumentException(path + ": unknown policy " + node);
    };
  }

  private static PartitionEviction eviction(JsonNode node) {
    if (node == null || node.isNull()) {
      return null;
    }
    String select = text(node, "select");
    if (!select.equals("lru")) {
      throw new IllegalArgumentException(
          "partition_eviction.select: the JVM core has LRU selection only, got '" + select
              + "' (an operator's selector is Python code)");
    }
    PartitionEviction.Limit limit = switch (text(node, "limit")) {
      case "age" -> PartitionEviction.Limit.AGE;
      case "count" -> PartitionEviction.Limit.COUNT;
      case "tuples" -> PartitionEviction.Limit.TUPLES;
      default -> throw new IllegalArgumentException("partition_eviction: unknown limit " + node);
    };
    return new PartitionEviction(limit, integer(node, "value"));
  }

  private static List<Summarizer> summarizers(JsonNode node) {
    List<Summarizer> list = new ArrayList<>();
    if (node == null || node.isNull()) {
      return list;
    }
    for (JsonNode item : node) {
      String summary = text(item, "summary").toUpperCase(Locale.ROOT);
      Summarizer.Kind kind = Summarizer.Kind.valueOf(summary);
      JsonNode k = item.path("k");
      list.add(new Summarizer(text(item, "name"), kind, optionalText(item, "attribute"),
          k.isIntegralNumber() ? k.asInt() : 0));
    }
    return list;
  }

  private static String text(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isTextual()) {
      throw new IllegalArgumentException(field + ": must be a string in " + node);
    }
    return value.asText();
  }

  private static String optionalText(JsonNode node, String field) {
    JsonNode value = node.get(field);
    return value == null || value.isNull() ? null : text(node, field);
  }

  private static long integer(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isIntegralNumber() || !value.canConvertToLong()) {
      throw new IllegalArgumentException(field + ": must be an integer in " + node);
    }
    return value.asLong();
  }

  private static double number(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isNumber()) {
      throw new IllegalArgumentException(field + ": must be a number in " + node);
    }
    return value.asDouble();
  }

  private static boolean flag(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isBoolean()) {
      throw new IllegalArgumentException(field + ": must be true or false in " + node);
    }
    return value.asBoolean();
  }
}
