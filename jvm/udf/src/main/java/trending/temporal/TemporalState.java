package trending.temporal;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything one key's temporal query remembers between steps, only what can still change an
 * output:
 *
 * <ul>
 *   <li>{@code closed}: events with a known lifetime that may still fall in a window not final;
 *   <li>{@code open}: start edges awaiting their end edge, by id in arrival order (their
 *       provisional end: the clip, or the end of time);
 *   <li>{@code ignoredEdges}: ids whose end edge is to be ignored;
 *   <li>{@code cti}: the last CTI (altered) and {@code frontier}, the window's own progress
 *       (snapshot: the start of the first snapshot not emitted; count: the last start time
 *       processed), absent until the window sets it.
 * </ul>
 */
public final class TemporalState {
  final TemporalWindow window;
  long cti;
  boolean hasFrontier;
  long frontier;
  final List<StoredEvent> closed;
  final Map<String, StoredEvent> open;
  final Set<String> ignoredEdges;

  TemporalState(TemporalWindow window, long cti) {
    this(window, cti, false, 0, new ArrayList<>(), new LinkedHashMap<>(), new HashSet<>());
  }

  private TemporalState(TemporalWindow window, long cti, boolean hasFrontier, long frontier,
      List<StoredEvent> closed, Map<String, StoredEvent> open, Set<String> ignoredEdges) {
    this.window = window;
    this.cti = cti;
    this.hasFrontier = hasFrontier;
    this.frontier = frontier;
    this.closed = closed;
    this.open = open;
    this.ignoredEdges = ignoredEdges;
  }

  /** Closed and open events (open ones with their provisional end). */
  List<StoredEvent> events() {
    List<StoredEvent> all = new ArrayList<>(closed.size() + open.size());
    all.addAll(closed);
    all.addAll(open.values());
    return all;
  }

  /** Holds no event: a driver may delete it (a fresh state at the current CTI is equal). */
  public boolean isIdle() {
    return closed.isEmpty() && open.isEmpty() && ignoredEdges.isEmpty();
  }

  /** The last CTI, altered. */
  public long cti() {
    return cti;
  }

  /** An independent copy (events are immutable and shared). */
  public TemporalState copy() {
    return new TemporalState(window, cti, hasFrontier, frontier, new ArrayList<>(closed),
        new LinkedHashMap<>(open), new HashSet<>(ignoredEdges));
  }

  void setFrontier(long value) {
    hasFrontier = true;
    frontier = value;
  }
}
