package trending.temporal;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.util.MinimalPrettyPrinter;
import com.fasterxml.jackson.databind.JsonNode;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import trending.replay.CaseReader;

/**
 * Replays temporal window inputs through the JVM core, writing the lines Python's {@code
 * trending.windows.temporal_replay} writes. Input lines (times ISO-8601 or epoch ms):
 *
 * <pre>
 * {"start": T, "end": T, "key": K, "value": V, "id": ID}   an interval event
 * {"start": T, "key": K, "value": V, "id": ID}             a start edge ("end" absent or null)
 * {"end_edge": ID, "end": T}                               closes start edge ID ("key" optional)
 * {"cti": T}                                               nothing before T changes any more
 * </pre>
 *
 * <p>Output lines {@code {"start": T, "end": T | null, "key": K, "value": V}}, CTI by CTI, the
 * rows of one CTI sorted by start, end, key, value (keys and values by Python's JSON text); the
 * end of the input is a CTI at the end of time.
 *
 * <pre>
 * ReplayMain SPEC.json &lt; inputs &gt; rows
 * ReplayMain --cases &lt; cases &gt; rows
 * </pre>
 *
 * <p>{@code SPEC.json} is a query in normal form ({@link SpecJson}). A refused line stops the
 * replay: the message ({@code line N: ...}) on standard error, exit code 2; late input dropped or
 * adjusted is reported on standard error at the end.
 *
 * <p>{@code --cases} runs many replays in one process: each case starts with a line {@code
 * {"spec": SPEC, "keep_going": B}} followed by its input lines; its output ends with a line
 * {@code {"end": true}}. A refused line writes {@code {"error": "line N: ..."}} and, unless
 * keep_going, skips the rest of the case; the late input report is a line {@code {"warning":
 * "..."}} before the end. There an input line {@code {"snapshot": true}} (not counted as a line)
 * encodes every key's state, decodes it (checking that it encodes to the same bytes) and goes on
 * with the decoded states.
 */
public final class ReplayMain implements CaseReader.Replay {
  private static final String FORMS =
      "{\"start\": T, \"end\": T, ...}, {\"end_edge\": ID, \"end\": T}, {\"cti\": T}";
  private static final Set<String> EVENT_FIELDS = Set.of("start", "end", "key", "value", "id");
  private static final Set<String> EDGE_FIELDS = Set.of("end_edge", "end", "key");

  private final JsonGenerator out;
  private KeyedRun run;
  private boolean keepGoing;
  private int line;

  private ReplayMain(JsonGenerator out) {
    this.out = out;
  }

  public static void main(String[] args) throws IOException {
    List<String> options = Arrays.asList(args);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    JsonGenerator generator =
        JsonValues.MAPPER.createGenerator(new BufferedOutputStream(System.out, 1 << 16));
    generator.setPrettyPrinter(new MinimalPrettyPrinter(""));
    ReplayMain main = new ReplayMain(generator);
    int status;
    if (options.contains("--cases")) {
      CaseReader.read(in, JsonValues.MAPPER, generator, main);
      status = 0;
    } else if (options.size() == 1 && !options.get(0).startsWith("--")) {
      status = main.single(Files.readString(Path.of(options.get(0)), StandardCharsets.UTF_8), in);
    } else {
      System.err.println("usage: ReplayMain SPEC.json | --cases");
      status = 2;
    }
    generator.flush();
    System.exit(status);
  }

  private int single(String spec, BufferedReader in) throws IOException {
    start(SpecJson.read(spec), false);
    for (String text = in.readLine(); text != null; text = in.readLine()) {
      line++;
      String problem = apply(text);
      if (problem != null) {
        System.err.println(problem);
        return 2;
      }
    }
    String problem = finish();
    if (problem != null) {
      System.err.println(problem);
      return 2;
    }
    if (run.dropped != 0 || run.adjusted != 0) {
      System.err.println(warning());
    }
    return 0;
  }

  /** A case's header: {@code {"spec": SPEC, "keep_going": B}}. */
  @Override
  public void start(JsonNode header) {
    start(SpecJson.read(header.get("spec")), header.path("keep_going").asBoolean());
  }

  private void start(TemporalQuery query, boolean goOn) {
    run = new KeyedRun(query);
    keepGoing = goOn;
    line = 0;
  }

  /** One input line of a case; false if it is refused and the rest of the case skipped. */
  @Override
  public boolean input(String text) throws IOException {
    if (text.equals("{\"snapshot\": true}")) {
      run.roundTrip();
      return true;
    }
    line++;
    String problem = apply(text);
    if (problem != null) {
      CaseReader.writeError(out, problem);
      return keepGoing;
    }
    return true;
  }

  /** The end of a case not stopped: the end of input, the late input report. */
  @Override
  public void end(boolean stopped) throws IOException {
    if (!stopped) {
      String problem = finish();
      if (problem != null) {
        CaseReader.writeError(out, problem);
      } else if (run.dropped != 0 || run.adjusted != 0) {
        out.writeStartObject();
        out.writeStringField("warning", warning());
        out.writeEndObject();
        out.writeRaw('\n');
      }
    }
  }

  private String warning() {
    return "late input (behind a CTI): " + run.dropped + " dropped, " + run.adjusted
        + " adjusted";
  }

  /** Apply one input line and write its rows; the problem ("line N: ...") if it is refused. */
  private String apply(String text) throws IOException {
    if (text.isBlank()) {
      return null;
    }
    try {
      write(feed(text));
      return null;
    } catch (TemporalInputError | ReplayError e) {
      return "line " + line + ": " + e.getMessage();
    }
  }

  private String finish() throws IOException {
    try {
      write(run.advance(Timeline.END_OF_TIME));
      return null;
    } catch (TemporalInputError e) {
      return "end of input: " + e.getMessage();
    }
  }

  private List<KeyedRun.Out> feed(String text) {
    JsonNode data = object(text);
    if (data.has("cti")) {
      only(data, Set.of("cti"), text);
      return run.advance(IsoTimes.parse(JsonValues.value(data.get("cti")), "cti"));
    }
    if (data.has("end_edge")) {
      only(data, EDGE_FIELDS, text);
      long end = IsoTimes.parse(needed(data, "end"), "end");
      run.endEdge(id(JsonValues.value(data.get("end_edge"))), end,
          JsonValues.value(data.get("key")));
      return new ArrayList<>();
    }
    only(data, EVENT_FIELDS, text);
    long start = IsoTimes.parse(needed(data, "start"), "start");
    Object endValue = JsonValues.value(data.get("end"));
    Long end = endValue == null ? null : IsoTimes.parse(endValue, "end");
    Object rawId = JsonValues.value(data.get("id"));
    String id = rawId == null ? null : id(rawId);
    Object value = JsonValues.value(data.get("value"));
    Item item = end == null
        ? new Item.StartEdge(start, value, id) : new Item.Interval(start, end, value, id);
    run.insert(JsonValues.value(data.get("key")), item);
    return new ArrayList<>();
  }

  private static JsonNode object(String text) {
    JsonNode data;
    try {
      data = JsonValues.MAPPER.readTree(text);
    } catch (JsonProcessingException e) {
      throw new ReplayError("not JSON (" + e.getOriginalMessage() + ")");
    }
    if (data == null || !data.isObject()) {
      throw new ReplayError("expected one of " + FORMS + "; got " + shown(text));
    }
    return data;
  }

  private static void only(JsonNode data, Set<String> allowed, String text) {
    TreeSet<String> unknown = new TreeSet<>();
    for (Iterator<String> it = data.fieldNames(); it.hasNext(); ) {
      String name = it.next();
      if (!allowed.contains(name)) {
        unknown.add(name);
      }
    }
    if (!unknown.isEmpty()) {
      throw new ReplayError("unknown field " + PythonText.repr(unknown.first()) + " in "
          + shown(text));
    }
  }

  private static Object needed(JsonNode data, String name) {
    if (!data.has(name)) {
      throw new ReplayError("missing " + PythonText.repr(name) + "; expected one of " + FORMS);
    }
    return JsonValues.value(data.get(name));
  }

  private static String id(Object value) {
    if (value instanceof String s) {
      return s;
    }
    if (value instanceof Long || value instanceof java.math.BigInteger) {
      return value.toString();
    }
    throw new ReplayError("an id must be a string or an integer, got " + PythonText.repr(value));
  }

  /** The line as an error shows it: stripped, at most 80 characters. */
  private static String shown(String text) {
    String stripped = text.strip();
    int count = stripped.codePointCount(0, stripped.length());
    return count <= 80 ? stripped : stripped.substring(0, stripped.offsetByCodePoints(0, 80));
  }

  private void write(List<KeyedRun.Out> rows) throws IOException {
    for (KeyedRun.Out row : rows) {
      out.writeStartObject();
      out.writeStringField("start", Timeline.format(row.row().start()));
      out.writeFieldName("end");
      if (row.row().end() == Timeline.END_OF_TIME) {
        out.writeNull();
      } else {
        out.writeString(Timeline.format(row.row().end()));
      }
      out.writeFieldName("key");
      JsonValues.write(row.key(), out);
      out.writeFieldName("value");
      JsonValues.write(row.row().value(), out);
      out.writeEndObject();
      out.writeRaw('\n');
    }
  }
}
