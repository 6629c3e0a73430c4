package trending.temporal;

import java.util.ArrayList;
import java.util.List;

/**
 * A temporal query: alter lifetimes, police CTI violations, window the events. Per key a driver
 * keeps a {@link TemporalState} (as bytes between micro-batches: {@link #encode}, {@link
 * #restore}) and either steps it:
 *
 * <pre>
 * Step step = query.step(state, items, cti);   // new events and edges, then the CTI (or null)
 * step.rows(), step.state()                    // rows made final; the state to store
 * </pre>
 *
 * <p>or runs a {@link TemporalLogic} over it ({@link #build}), as a Spark processor does to
 * advance, insert row by row (turning refused input into dead letters) and advance again. A run
 * split into any steps, with the state stored in between, gives the same rows as one step.
 * {@link SpecJson} reads a query from the normal form Python's {@code
 * TemporalQuery.to_jvm_json()} writes.
 */
public final class TemporalQuery {
  final TemporalWindow window;
  final Alteration alteration;
  final Violation violation;

  TemporalQuery(TemporalWindow window, Alteration alteration, Violation violation) {
    this.window = window;
    this.alteration = alteration;
    this.violation = violation;
  }

  public Violation violation() {
    return violation;
  }

  /** The state of a key seen for the first time while the (input) CTI is {@code cti}. */
  public TemporalState initialState(long cti) {
    return new TemporalState(window, alteration.cti(cti));
  }

  /** The state of a key seen for the first time, at the beginning of time. */
  public TemporalState initialState() {
    return initialState(Timeline.BEGINNING_OF_TIME);
  }

  /** The query running over {@code state}, changed in place. */
  public TemporalLogic build(TemporalState state) {
    if (state.window.code() != window.code()) {
      throw new IllegalArgumentException("a state of another query");
    }
    return new TemporalLogic(this, state);
  }

  /** Apply {@code items}, then advance to {@code cti} (none: null); {@code state} is kept. */
  public Step step(TemporalState state, List<Item> items, Long cti) {
    TemporalLogic logic = build(state.copy());
    for (Item item : items) {
      logic.insert(item);
    }
    List<Row> rows = cti != null ? logic.advance(cti) : new ArrayList<>();
    return new Step(rows, logic.state(), logic.dropped(), logic.adjusted());
  }

  /** The state as bytes ({@link StateCodec}). */
  public byte[] encode(TemporalState state) {
    return StateCodec.encode(state);
  }

  /** The state {@link #encode} wrote; {@link IllegalArgumentException} if not this window's. */
  public TemporalState restore(byte[] bytes) {
    return StateCodec.decode(this, bytes);
  }
}
