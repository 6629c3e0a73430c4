package trending.state;

import java.util.HashMap;
import java.util.Map;
import org.apache.spark.TaskContext;

/**
 * What the driver decides for one micro-batch and the executors read: the watermark the batch
 * runs under, the batch's clock and, per open window, the smallest count its published top-k
 * holds once full.
 *
 * <p>The driver sets the session conf {@code spark.trending.batch.<job>} to this text before it
 * runs the batch; Spark hands every {@code spark.*} session setting to the batch's tasks as local
 * properties, where {@link #current} reads it. Text form: {@code w=<watermark ms or empty>;c=<clock
 * ms or empty>;t=<window start>:<count>,...}. Values that change every batch reach the tasks
 * this way rather than as literals in the plan, so the generated code stays the same from batch
 * to batch and is compiled (and JIT-compiled) once.
 */
public final class BatchParams {
  public static final String PROPERTY_PREFIX = "spark.trending.batch.";
  private static final BatchParams NONE = new BatchParams(null, null, new HashMap<>());
  private static volatile Parsed cached = new Parsed("", NONE);

  private final Long watermarkMs;
  private final Long clockMs;
  private final Map<Long, Long> thresholds;

  /** The last text read and its parameters, replaced as one (tasks of two batches may race). */
  private record Parsed(String text, BatchParams params) {}

  /**
   * A thread's last answer: a task's local properties are fixed for its life, so the per-record
   * calls of one task find their parameters here without a property lookup.
   */
  private record Lookup(long taskAttemptId, String job, BatchParams params) {}

  private static final ThreadLocal<Lookup> LAST_LOOKUP = new ThreadLocal<>();

  private BatchParams(Long watermarkMs, Long clockMs, Map<Long, Long> thresholds) {
    this.watermarkMs = watermarkMs;
    this.clockMs = clockMs;
    this.thresholds = thresholds;
  }

  /** The watermark of the batch, or null before the first event. */
  public Long watermarkMs() {
    return watermarkMs;
  }

  /** The batch's clock (Spark's batch timestamp, epoch ms), or null when none was set. */
  public Long clockMs() {
    return clockMs;
  }

  /** Whether window {@code [start, start + size)} is still open: {@code start + size > W}. */
  public boolean isOpen(long windowEnd) {
    return watermarkMs == null || windowEnd > watermarkMs;
  }

  /**
   * A changed count of the window below this cannot enter its top-k: the k-th count of the
   * window's last published (full) top-k, or 0.
   */
  public long threshold(long windowStart) {
    Long found = thresholds.get(windowStart);
    return found == null ? 0L : found;
  }

  /** The parameters of the running task's batch for {@code job} (none outside a task). */
  public static BatchParams current(String job) {
    TaskContext task = TaskContext.get();
    if (task == null) {
      return NONE;
    }
    Lookup last = LAST_LOOKUP.get();
    if (last != null && last.taskAttemptId() == task.taskAttemptId() && last.job().equals(job)) {
      return last.params();
    }
    BatchParams params = fromText(task.getLocalProperty(PROPERTY_PREFIX + job));
    LAST_LOOKUP.set(new Lookup(task.taskAttemptId(), job, params));
    return params;
  }

  private static BatchParams fromText(String text) {
    if (text == null) {
      return NONE;
    }
    Parsed last = cached;
    if (!text.equals(last.text())) {
      last = new Parsed(text, parse(text));
      cached = last;
    }
    return last.params();
  }

  /** Parses the text form (see the class comment). */
  public static BatchParams parse(String text) {
    Long watermark = null;
    Long clock = null;
    Map<Long, Long> thresholds = new HashMap<>();
    for (String part : text.split(";", -1)) {
      if (part.startsWith("w=") && part.length() > 2) {
        watermark = Long.parseLong(part.substring(2));
      } else if (part.startsWith("c=") && part.length() > 2) {
        clock = Long.parseLong(part.substring(2));
      } else if (part.startsWith("t=") && part.length() > 2) {
        for (String pair : part.substring(2).split(",")) {
          int colon = pair.indexOf(':');
          thresholds.put(
              Long.parseLong(pair.substring(0, colon)), Long.parseLong(pair.substring(colon + 1)));
        }
      }
    }
    return new BatchParams(watermark, clock, thresholds);
  }
}
