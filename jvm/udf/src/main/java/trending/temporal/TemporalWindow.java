package trending.temporal;

import java.util.List;

/** What a window does: check values, emit the rows a CTI makes final (in time order). */
interface TemporalWindow {
  /** The window's code in the state encoding. */
  int code();

  void check(Object value);

  /** The rows that CTI {@code cti} (altered) makes final; forgets what no later row needs. */
  List<Row> emit(TemporalState state, long cti);
}
