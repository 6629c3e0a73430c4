package trending.spl;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.MinimalPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import trending.replay.CaseReader;

/**
 * Replays SPL window inputs through the JVM core, writing the event lines Python's {@code
 * trending.windows.replay} writes. Input lines: {@code {"tuple": {...}}} (insert at the current
 * clock time, into the partition {@code tuple[partition_by]}), {@code {"punct": true}}, {@code
 * {"time": T}} (advance the clock to {@code T} seconds); output lines: {@code {"event": NAME,
 * "partition": P, "tuples": [...]}}, plus {@code "summary"} on the flushes of a window with
 * summarizers.
 *
 * <pre>
 * ReplayMain SPEC.json [--time-ms] [--keep-going] &lt; inputs &gt; events
 * ReplayMain --cases &lt; cases &gt; events
 * </pre>
 *
 * <p>{@code SPEC.json} is a spec in normal form ({@link SpecJson}). {@code --time-ms} adds each
 * event's {@code "time_ms"}; {@code --keep-going} writes {@code {"error": "line N: ..."}} for an
 * input the window refuses and goes on (else the replay stops there: the message on standard
 * error, exit code 2).
 *
 * <p>{@code --cases} runs many replays in one process: each case starts with a line {@code
 * {"spec": SPEC, "time_ms": B, "keep_going": B}} followed by its input lines, and its output
 * ends with a line {@code {"end": true}} (a refused input without keep_going: an error line,
 * then the rest of the case is skipped). There an input line {@code {"snapshot": true}} encodes
 * the window's state, restores a new window from it (checking that it encodes to the same bytes)
 * and goes on with that one.
 */
public final class ReplayMain implements CaseReader.Replay {
  private final JsonGenerator out;
  private WindowConfig config;
  private JsonTuples tuples;
  private WindowLogic<ObjectNode, JsonTuples.Key> window;
  private boolean timeMs;
  private boolean keepGoing;
  private boolean single;
  private int line;
  private final WindowEvents<ObjectNode, JsonTuples.Key> writer = this::write;

  private ReplayMain(JsonGenerator out) {
    this.out = out;
  }

  public static void main(String[] args) throws IOException {
    List<String> options = Arrays.asList(args);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    JsonGenerator generator =
        JsonTuples.MAPPER.createGenerator(new BufferedOutputStream(System.out, 1 << 16));
    generator.setPrettyPrinter(new MinimalPrettyPrinter(""));
    ReplayMain main = new ReplayMain(generator);
    int status;
    if (options.contains("--cases")) {
      CaseReader.read(in, JsonTuples.MAPPER, generator, main);
      status = 0;
    } else if (!options.isEmpty() && !options.get(0).startsWith("--")) {
      String spec = Files.readString(Path.of(options.get(0)), StandardCharsets.UTF_8);
      status = main.single(spec, options.contains("--time-ms"),
          options.contains("--keep-going"), in);
    } else {
      System.err.println("usage: ReplayMain SPEC.json [--time-ms] [--keep-going] | --cases");
      status = 2;
    }
    generator.flush();
    System.exit(status);
  }

  private int single(String spec, boolean withTime, boolean goOn, BufferedReader in)
      throws IOException {
    start(SpecJson.read(spec), withTime, goOn);
    single = true;
    for (String text = in.readLine(); text != null; text = in.readLine()) {
      if (!input(text)) {
        return 2;
      }
    }
    return 0;
  }

  /** A case's header: {@code {"spec": SPEC, "time_ms": B, "keep_going": B}}. */
  @Override
  public void start(JsonNode header) {
    start(SpecJson.read(header.get("spec")), header.path("time_ms").asBoolean(),
        header.path("keep_going").asBoolean());
  }

  private void start(WindowConfig spec, boolean withTime, boolean goOn) {
    config = spec;
    tuples = new JsonTuples();
    window = config.build(tuples);
    timeMs = withTime;
    keepGoing = goOn;
    line = 0;
  }

  /** Apply one input line; false if the window refused it and the replay stops. */
  @Override
  public boolean input(String text) throws IOException {
    line++;
    if (text.isBlank()) {
      return true;
    }
    try {
      apply(text);
      return true;
    } catch (InputError e) {
      if (single && !keepGoing) {
        System.err.println("line " + line + ": " + e.getMessage());
        return false;
      }
      CaseReader.writeError(out, "line " + line + ": " + e.getMessage());
      return keepGoing;
    }
  }

  private void apply(String text) {
    JsonNode data;
    try {
      data = JsonTuples.MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new InputError("not JSON (" + e.getOriginalMessage() + ")");
    }
    if (data == null || !data.isObject() || data.size() != 1) {
      throw new InputError("expected one of {\"tuple\": {...}}, {\"punct\": true}, {\"time\": T}");
    }
    Map.Entry<String, JsonNode> item = data.properties().iterator().next();
    JsonNode value = item.getValue();
    switch (item.getKey()) {
      case "tuple" -> {
        if (!value.isObject()) {
          throw new InputError("a tuple must be an object");
        }
        ObjectNode record = (ObjectNode) value;
        window.insert(record, partitionOf(record), writer);
      }
      case "punct" -> {
        if (!value.isBoolean() || !value.asBoolean()) {
          throw new InputError("expected {\"punct\": true}");
        }
        window.punct(writer);
      }
      case "time" -> window.advanceTo(timeMillis(value), writer);
      case "snapshot" -> roundTrip();
      default -> throw new InputError("expected {\"tuple\": {...}}, {\"punct\": true}, "
          + "{\"time\": T}");
    }
  }

  private JsonTuples.Key partitionOf(ObjectNode record) {
    String attribute = config.partitionBy();
    if (attribute == null) {
      return null;
    }
    JsonNode key = record.get(attribute);
    if (key == null) {
      throw new InputError("tuple has no partition attribute '" + attribute + "'");
    }
    if (key.isContainerNode()) {
      throw new InputError("partition attribute '" + attribute + "' must be a scalar");
    }
    return JsonTuples.Key.of(key);
  }

  /** {@code {"time": T}}: {@code T} seconds as whole milliseconds, not before the clock. */
  private long timeMillis(JsonNode value) {
    long millis;
    if (value.isIntegralNumber() && value.canConvertToLong()) {
      millis = Math.multiplyExact(value.asLong(), 1000L);
    } else if (value.isFloatingPointNumber() && Double.isFinite(value.asDouble())) {
      double exact = value.asDouble() * 1000;
      double rounded = Math.rint(exact);
      if (Math.abs(exact - rounded) > 1e-6 * Math.max(1.0, Math.abs(exact))) {
        throw new InputError(value + " seconds is not a whole number of milliseconds");
      }
      millis = (long) rounded;
    } else {
      throw new InputError("time must be a number of seconds, got " + value);
    }
    if (millis < window.nowMs()) {
      throw new InputError("time " + value + " s is before the clock; time only moves forward");
    }
    return millis;
  }

  /** Encode the state, continue from a window restored from it. */
  private void roundTrip() {
    byte[] bytes = window.encode(JsonTuples.RECORDS, JsonTuples.KEYS);
    JsonTuples reader = new JsonTuples();
    WindowLogic<ObjectNode, JsonTuples.Key> restored =
        config.restore(reader, bytes, JsonTuples.RECORDS, JsonTuples.KEYS);
    byte[] again = restored.encode(JsonTuples.RECORDS, JsonTuples.KEYS);
    if (!Arrays.equals(bytes, again)) {
      throw new IllegalStateException("a restored window encodes to other bytes at line " + line);
    }
    tuples = reader;
    window = restored;
  }

  private void write(
      EventKind kind, JsonTuples.Key partition, Tuples<ObjectNode> content, long atMs,
      Summary summary) {
    try {
      out.writeStartObject();
      out.writeStringField("event", kind.json());
      out.writeFieldName("partition");
      if (partition == null) {
        out.writeNull();
      } else {
        out.writeTree(partition.node);
      }
      out.writeArrayFieldStart("tuples");
      for (int i = 0; i < content.size(); i++) {
        out.writeTree(content.get(i));
      }
      out.writeEndArray();
      if (summary != null) {
        out.writeObjectFieldStart("summary");
        for (int i = 0; i < summary.size(); i++) {
          out.writeFieldName(summary.name(i));
          writeValue(summary.value(i));
        }
        out.writeEndObject();
      }
      if (timeMs) {
        out.writeNumberField("time_ms", atMs);
      }
      out.writeEndObject();
      out.writeRaw('\n');
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void writeValue(Object value) throws IOException {
    if (value == null) {
      out.writeNull();
    } else if (value instanceof Long l) {
      out.writeNumber(l);
    } else if (value instanceof Double d) {
      out.writeNumber(d);
    } else {
      out.writeStartArray();
      for (Iterator<?> it = ((List<?>) value).iterator(); it.hasNext(); ) {
        writeValue(it.next());
      }
      out.writeEndArray();
    }
  }
}
