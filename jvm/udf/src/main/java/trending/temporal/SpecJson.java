package trending.temporal;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Locale;

/**
 * Reads a temporal query in its normal form, the JSON Python's {@code
 * TemporalQuery.to_jvm_json()} writes from a spec {@code parse_temporal_spec} has already
 * checked: every field explicit, times in integer milliseconds:
 *
 * <pre>
 * {"version": 1, "violation": "fail" | "drop" | "adjust",
 *  "alteration": {"shift_ms": S, "duration_ms": D | null, "extend_ms": E, "clip_ms": C | null},
 *  "window": W}
 * W = {"kind": "hopping", "duration_ms": D, "hop_ms": P, "alignment_ms": A, "snap": B,
 *      "aggregate": G, "max_windows": N | null}
 *   | {"kind": "snapshot", "aggregate": G} | {"kind": "count", "n": N, "aggregate": G}
 *   | {"kind": "alter"}
 * G = {"name": "count" | "sum" | "min" | "max" | "average" | "top_k" | "time_weighted_average",
 *      "k": K | null}
 * </pre>
 *
 * <p>Every duration, hop, shift, extension and clip must be at most {@link Timeline#LONGEST} in
 * magnitude (the timeline itself spans less than 2^49 ms), so that no time arithmetic overflows.
 * A Spark processor keeps the spec as this text and reads it once when it starts.
 */
public final class SpecJson {
  private static final ObjectMapper MAPPER = new ObjectMapper();

  private SpecJson() {}

  /** The query {@code json} describes; {@link IllegalArgumentException} if it cannot. */
  public static TemporalQuery read(String json) {
    try {
      return read(MAPPER.readTree(json));
    } catch (JsonProcessingException e) {
      throw new IllegalArgumentException("temporal spec is not JSON: " + e.getOriginalMessage(), e);
    }
  }

  /** The query the parsed spec {@code spec} describes. */
  public static TemporalQuery read(JsonNode spec) {
    if (spec == null || !spec.isObject() || spec.path("version").asInt() != 1) {
      throw new IllegalArgumentException("not a version 1 temporal spec in normal form: " + spec);
    }
    Violation violation = switch (text(spec, "violation")) {
      case "fail" -> Violation.FAIL;
      case "drop" -> Violation.DROP;
      case "adjust" -> Violation.ADJUST;
      default -> throw new IllegalArgumentException("violation: unknown policy in " + spec);
    };
    return new TemporalQuery(window(object(spec, "window")),
        alteration(object(spec, "alteration")), violation);
  }

  private static Alteration alteration(JsonNode node) {
    Long duration = optionalLength(node, "duration_ms");
    Long clip = optionalLength(node, "clip_ms");
    if ((duration != null && duration <= 0) || (clip != null && clip <= 0)) {
      throw new IllegalArgumentException("alteration: duration and clip must be positive");
    }
    return new Alteration(length(node, "shift_ms"), duration, length(node, "extend_ms"), clip);
  }

  private static TemporalWindow window(JsonNode node) {
    String kind = text(node, "kind");
    return switch (kind) {
      case "hopping" -> hopping(node);
      case "snapshot" -> new SnapshotWindow(aggregate(node), null);
      case "count" -> new CountWindow(positive(node, "n"), aggregate(node));
      case "alter" -> new AlteredEvents();
      default -> throw new IllegalArgumentException("window.kind: unknown kind " + kind);
    };
  }

  private static TemporalWindow hopping(JsonNode node) {
    long duration = length(node, "duration_ms");
    long hop = length(node, "hop_ms");
    if (duration <= 0 || hop <= 0) {
      throw new IllegalArgumentException("window: duration and hop must be positive in " + node);
    }
    Geometry geometry = new Geometry(duration, hop, integer(node, "alignment_ms"));
    Aggregate aggregate = aggregate(node);
    JsonNode snap = node.get("snap");
    if (snap == null || !snap.isBoolean()) {
      throw new IllegalArgumentException("snap: must be true or false in " + node);
    }
    if (snap.asBoolean()) {
      if (aggregate.timeSensitive()) {
        throw new IllegalArgumentException(
            "aggregate: " + aggregate.kind.json() + " cannot run over snapped lifetimes");
      }
      return new SnapshotWindow(aggregate, geometry);
    }
    JsonNode most = node.get("max_windows");
    long maxWindows = most == null || most.isNull() ? Long.MAX_VALUE : positive(node, "max_windows");
    return new HoppingWindow(geometry, aggregate, maxWindows);
  }

  private static Aggregate aggregate(JsonNode node) {
    JsonNode aggregate = object(node, "aggregate");
    String name = text(aggregate, "name");
    Aggregate.Kind kind;
    try {
      kind = Aggregate.Kind.valueOf(name.toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("aggregate: unknown aggregate " + name, e);
    }
    JsonNode k = aggregate.get("k");
    boolean hasK = k != null && !k.isNull();
    if ((kind == Aggregate.Kind.TOP_K) != hasK) {
      throw new IllegalArgumentException("aggregate: top_k needs a k, and only top_k takes one");
    }
    return new Aggregate(kind, hasK ? positive(aggregate, "k") : 0);
  }

  private static JsonNode object(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isObject()) {
      throw new IllegalArgumentException(field + ": must be an object in " + node);
    }
    return value;
  }

  private static String text(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isTextual()) {
      throw new IllegalArgumentException(field + ": must be a string in " + node);
    }
    return value.asText();
  }

  private static long integer(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value == null || !value.isIntegralNumber() || !value.canConvertToLong()) {
      throw new IllegalArgumentException(field + ": must be an integer in " + node);
    }
    return value.asLong();
  }

  private static long positive(JsonNode node, String field) {
    JsonNode value = node.get(field);
    if (value != null && value.isIntegralNumber() && !value.canConvertToLong()
        && value.bigIntegerValue().signum() > 0) {
      return Long.MAX_VALUE; // more than any count of windows, events or values there can be
    }
    long n = integer(node, field);
    if (n <= 0) {
      throw new IllegalArgumentException(field + ": must be positive in " + node);
    }
    return n;
  }

  /** A length in ms, at most {@link Timeline#LONGEST} in magnitude. */
  private static long length(JsonNode node, String field) {
    long value = integer(node, field);
    if (Math.abs(value) > Timeline.LONGEST) {
      throw new IllegalArgumentException(field + ": the JVM core takes lengths up to 2^52 ms "
          + "(some 142,000 years, more than the timeline), got " + value);
    }
    return value;
  }

  private static Long optionalLength(JsonNode node, String field) {
    JsonNode value = node.get(field);
    return value == null || value.isNull() ? null : length(node, field);
  }
}
