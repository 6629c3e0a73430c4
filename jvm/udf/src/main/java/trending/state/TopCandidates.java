package trending.state;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;

/**
 * The {@code k} best window-count rows of each window ({@link HashtagState#OUTPUT}): count
 * descending, then tag ascending by code point (Spark's string order), as {@code row_number()
 * over (partition by window_start order by count desc, tag asc) <= k} would keep them; every
 * other row passes through. Each task keeps its own {@code k} best per window with a bounded
 * heap ({@code O(n log k)} where a sort would be {@code O(n log n)}); the global top {@code k} of
 * a window is among the union of the tasks' top {@code k}.
 *
 * <p>{@link #apply} then keeps the {@code k} best of those in one task, for a plan whose result
 * must be exactly the {@code k} best per window (a batch DataFrame's top-k). A micro-batch needs
 * only the tasks' cut, which {@link CollectedBatch} makes as it collects: its driver merges the
 * union into each window's last top-k anyway.
 */
public final class TopCandidates implements MapPartitionsFunction<Row, Row> {
  private static final long serialVersionUID = 1L;
  private static final int KIND = 0;
  private static final int WINDOW_START = 1;
  private static final int TAG = 2;
  private static final int COUNT = 3;
  /** Worse first: the heap's head is the row to drop. */
  private static final Comparator<Row> WORSE_FIRST = (a, b) -> -better(a, b);

  private final int k;

  public TopCandidates(int k) {
    if (k < 1) {
      throw new IllegalArgumentException("k must be >= 1, got " + k);
    }
    this.k = k;
  }

  /** {@code rows} narrowed to the {@code k} best window-count rows per window, in one partition. */
  public static Dataset<Row> apply(Dataset<Row> rows, int k) {
    TopCandidates best = new TopCandidates(k);
    return perTask(rows, k).repartition(1).mapPartitions(best, Encoders.row(rows.schema()));
  }

  /**
   * {@code rows} narrowed, in each of its partitions, to that partition's {@code k} best
   * window-count rows per window: a narrow step, run in the tasks that make {@code rows}.
   */
  private static Dataset<Row> perTask(Dataset<Row> rows, int k) {
    Encoder<Row> sameRows = Encoders.row(rows.schema());
    return rows.mapPartitions(new TopCandidates(k), sameRows);
  }

  @Override
  public Iterator<Row> call(Iterator<Row> rows) {
    Map<Long, PriorityQueue<Row>> best = new HashMap<>();
    List<Row> out = new ArrayList<>();
    while (rows.hasNext()) {
      Row row = rows.next();
      if (row.getInt(KIND) != HashtagPaneProcessor.COUNTED) {
        out.add(row);
        continue;
      }
      PriorityQueue<Row> heap =
          best.computeIfAbsent(row.getLong(WINDOW_START), w -> new PriorityQueue<>(WORSE_FIRST));
      if (heap.size() < k) {
        heap.add(row);
      } else if (better(row, heap.peek()) < 0) {
        heap.poll();
        heap.add(row);
      }
    }
    for (PriorityQueue<Row> heap : best.values()) {
      out.addAll(heap);
    }
    return out.iterator();
  }

  /** Negative when {@code a} ranks before {@code b}: higher count, then smaller tag. */
  static int better(Row a, Row b) {
    int byCount = Long.compare(b.getLong(COUNT), a.getLong(COUNT));
    return byCount != 0 ? byCount : compareCodePoints(a.getString(TAG), b.getString(TAG));
  }

  /** Strings by code point, as Spark orders them (UTF-8 bytes), not by UTF-16 unit. */
  static int compareCodePoints(String a, String b) {
    int i = 0;
    int j = 0;
    while (i < a.length() && j < b.length()) {
      int ca = a.codePointAt(i);
      int cb = b.codePointAt(j);
      if (ca != cb) {
        return Integer.compare(ca, cb);
      }
      i += Character.charCount(ca);
      j += Character.charCount(cb);
    }
    return Integer.compare(a.length() - i, b.length() - j);
  }
}
