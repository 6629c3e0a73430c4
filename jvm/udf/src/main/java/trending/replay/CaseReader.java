package trending.replay;

import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.BufferedReader;
import java.io.IOException;

/**
 * The {@code --cases} mode of a JVM core's {@code ReplayMain}: many replays in one process. Each
 * case starts with a header line {@code {"spec": ...}} followed by its input lines; its output
 * ends with a line {@code {"end": true}}. A spec the core refuses writes {@code {"error": "spec:
 * ..."}} and skips the case; an input line that stops the replay skips the rest of it.
 */
public final class CaseReader {
  private CaseReader() {}

  /** A core's side of the cases. */
  public interface Replay {
    /** Start a case from its header; {@link IllegalArgumentException} if the spec is refused. */
    void start(JsonNode header);

    /** Apply one input line of the case; false if the rest of the case is skipped. */
    boolean input(String text) throws IOException;

    /** Write what comes before the case's end line ({@code stopped}: its rest was skipped). */
    default void end(boolean stopped) throws IOException {}
  }

  /** Replay every case of {@code in} (headers read by {@code mapper}); end lines go to out. */
  public static void read(BufferedReader in, ObjectMapper mapper, JsonGenerator out,
      Replay replay) throws IOException {
    boolean open = false;
    boolean stopped = false;
    for (String text = in.readLine(); text != null; text = in.readLine()) {
      JsonNode header = text.startsWith("{\"spec\"") ? mapper.readTree(text) : null;
      if (header == null) {
        if (open && !stopped) {
          stopped = !replay.input(text);
        }
        continue;
      }
      if (open) {
        end(out, replay, stopped);
      }
      open = true;
      try {
        replay.start(header);
        stopped = false;
      } catch (IllegalArgumentException e) {
        writeError(out, "spec: " + e.getMessage());
        stopped = true;
      }
    }
    if (open) {
      end(out, replay, stopped);
    }
  }

  /** An error line, {@code {"error": message}}. */
  public static void writeError(JsonGenerator out, String message) throws IOException {
    out.writeStartObject();
    out.writeStringField("error", message);
    out.writeEndObject();
    out.writeRaw('\n');
  }

  private static void end(JsonGenerator out, Replay replay, boolean stopped) throws IOException {
    replay.end(stopped);
    out.writeStartObject();
    out.writeBooleanField("end", true);
    out.writeEndObject();
    out.writeRaw('\n');
  }
}
