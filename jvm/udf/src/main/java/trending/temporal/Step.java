package trending.temporal;

import java.util.List;

/** The rows one step made final, the state after it, and the late input it handled. */
public record Step(List<Row> rows, TemporalState state, long dropped, long adjusted) {}
