package trending.state;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.streaming.StreamingQueryListener;

/**
 * A streaming query listener that keeps each event as one line of JSON for Python to take in
 * one call ({@link #drain}). pyspark's own listeners get each event as a Java object that Python
 * reads field by field over the gateway: hundreds of calls per micro-batch, each a reflective
 * lookup, on the listener bus beside the batch's tasks. Lines:
 *
 * <ul>
 *   <li>{@code {"event":"started","id":"<query id>"}}
 *   <li>{@code {"event":"progress","progress":<StreamingQueryProgress.json()>}}
 *   <li>{@code {"event":"idle","id":"<query id>"}}
 *   <li>{@code {"event":"terminated","id":"<query id>","failed":true|false}}
 * </ul>
 *
 * At most {@code capacity} lines wait; older ones are dropped first and counted ({@link
 * #dropped}).
 */
public final class ProgressQueue extends StreamingQueryListener {
  private static final long serialVersionUID = 1L;
  private final int capacity;
  private final transient ArrayDeque<String> lines = new ArrayDeque<>();
  private long dropped;

  public ProgressQueue(int capacity) {
    if (capacity < 1) {
      throw new IllegalArgumentException("capacity must be >= 1, got " + capacity);
    }
    this.capacity = capacity;
  }

  @Override
  public void onQueryStarted(QueryStartedEvent event) {
    add("{\"event\":\"started\",\"id\":\"" + event.id() + "\"}");
  }

  @Override
  public void onQueryProgress(QueryProgressEvent event) {
    add("{\"event\":\"progress\",\"progress\":" + event.progress().json() + "}");
  }

  @Override
  public void onQueryIdle(QueryIdleEvent event) {
    add("{\"event\":\"idle\",\"id\":\"" + event.id() + "\"}");
  }

  @Override
  public void onQueryTerminated(QueryTerminatedEvent event) {
    boolean failed = event.exception().isDefined();
    add("{\"event\":\"terminated\",\"id\":\"" + event.id() + "\",\"failed\":" + failed + "}");
  }

  private synchronized void add(String line) {
    if (lines.size() >= capacity) {
      lines.pollFirst();
      dropped++;
    }
    lines.addLast(line);
  }

  /** The waiting lines, oldest first, joined by newlines ("" when none); the queue is emptied. */
  public synchronized String drain() {
    List<String> out = new ArrayList<>(lines);
    lines.clear();
    return String.join("\n", out);
  }

  /** Lines dropped because the queue was full, since it was made. */
  public synchronized long dropped() {
    return dropped;
  }
}
