package trending.state;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.PriorityQueue;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.rdd.RDD;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.execution.LogicalRDD;
import org.apache.spark.sql.execution.SQLExecution;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.unsafe.types.UTF8String;
import scala.Function0;

/**
 * A micro-batch of {@link HashtagState#apply}'s rows, run once: each task's {@code k} best
 * window-count rows per window reach the driver as bytes ({@link #counted}), its late and dead
 * rows stay on the executors until read ({@link #side}) or {@link #close closed}.
 *
 * <p>The driver merges the tasks' candidates into each window's last top-k ({@code top_k(last ∪
 * candidates)}), so a task's {@code k} best per window are all it needs, cut as {@link
 * TopCandidates} cuts them (count descending, then tag by code point). The cut
 * happens here, not as a step of the streaming plan: a plan step of {@code Row}s brings two
 * encoders of every column into the plan that Spark analyses, optimizes and compiles again every
 * micro-batch.
 *
 * <p>A micro-batch's plan updates the state store, so it may run only once; its side rows,
 * rare, must still be readable after its counts are collected. Caching the batch as a
 * {@code Dataset} does that, but it builds columnar batches of every row, and each query on the
 * cache is planned anew. Here one job runs the batch's RDD; each task keeps a copy of its side
 * rows in the block manager (spilled to disk when memory is short).
 */
public final class CollectedBatch implements AutoCloseable {
  private static final int KIND = 0;
  private static final int WINDOW_START = 1;
  private static final int TAG = 2;
  private static final int COUNT = 3;

  private final SparkSession spark;
  private final StructType schema;
  private final JavaRDD<Object> parts; // side rows (copies), then the task's counted rows' bytes
  private final byte[] counted;

  private CollectedBatch(SparkSession spark, StructType schema, JavaRDD<Object> parts) {
    this.spark = spark;
    this.schema = schema;
    this.parts = parts;
    // the tasks read the batch's parameters from the session's settings (BatchParams), which
    // Spark hands to a job's tasks only when the job runs as a SQL execution or like one
    Function0<List<Object>> job = () -> parts.filter(CollectedBatch::isCounted).collect();
    this.counted = concat(SQLExecution.withSQLConfPropagated(spark, job));
  }

  /** Run {@code batch} (columns: {@link HashtagState#OUTPUT}) once, cut at {@code k}. */
  public static CollectedBatch run(Dataset<Row> batch, int k) {
    if (k < 1) {
      throw new IllegalArgumentException("k must be >= 1, got " + k);
    }
    org.apache.spark.sql.classic.Dataset<Row> classic =
        (org.apache.spark.sql.classic.Dataset<Row>) batch;
    StructType schema = batch.schema();
    if (!schema.equals(HashtagState.OUTPUT)) {
      throw new IllegalArgumentException(
          "not a top-k candidates batch: " + schema.simpleString() + ", want "
              + HashtagState.OUTPUT.simpleString());
    }
    JavaRDD<Object> parts =
        rowsOf(classic).toJavaRDD().mapPartitions(rows -> split(rows, k)).persist(
            StorageLevel.MEMORY_AND_DISK());
    try {
      return new CollectedBatch((SparkSession) batch.sparkSession(), schema, parts);
    } catch (RuntimeException e) {
      parts.unpersist(false);
      throw e;
    }
  }

  /**
   * The tasks' {@code k} best window-count rows per window: for each its window start (8 bytes),
   * its tag's UTF-8 length (4 bytes) and bytes, and its count (8 bytes), big-endian.
   */
  public byte[] counted() {
    return counted;
  }

  /** The late and dead rows, read from the executors' copies (the batch does not run again). */
  public Dataset<Row> side() {
    RDD<InternalRow> rows = parts.filter(part -> part instanceof InternalRow)
        .map(part -> (InternalRow) part)
        .rdd();
    return spark.internalCreateDataFrame(rows, schema, false);
  }

  @Override
  public void close() {
    parts.unpersist(false);
  }

  /**
   * The batch's rows. A {@code foreachBatch} DataFrame is a scan of the RDD Spark already made
   * from the micro-batch's plan: take it as it is, rather than plan that scan.
   */
  private static RDD<InternalRow> rowsOf(org.apache.spark.sql.classic.Dataset<Row> batch) {
    LogicalPlan plan = batch.logicalPlan();
    if (plan instanceof LogicalRDD scan) {
      return scan.rdd();
    }
    return batch.queryExecution().toRdd();
  }

  /**
   * A task's side rows as they come (copies: the scan reuses its row), then its {@code k} best
   * window-count rows per window, packed.
   */
  private static Iterator<Object> split(Iterator<InternalRow> rows, int k) {
    return new Iterator<>() {
      private final Map<Long, PriorityQueue<Candidate>> best = new HashMap<>();
      private Object next;
      private boolean done;

      @Override
      public boolean hasNext() {
        while (next == null && !done) {
          if (!rows.hasNext()) {
            next = pack(best);
            done = true;
          } else {
            InternalRow row = rows.next();
            if (row.getInt(KIND) == HashtagPaneProcessor.COUNTED) {
              keep(row);
            } else {
              next = row.copy();
            }
          }
        }
        return next != null;
      }

      @Override
      public Object next() {
        if (!hasNext()) {
          throw new NoSuchElementException();
        }
        Object out = next;
        next = null;
        return out;
      }

      private void keep(InternalRow row) {
        long start = row.getLong(WINDOW_START);
        long count = row.getLong(COUNT);
        PriorityQueue<Candidate> heap =
            best.computeIfAbsent(start, w -> new PriorityQueue<>(Candidate.WORSE_FIRST));
        if (heap.size() < k) {
          heap.add(new Candidate(start, row.getUTF8String(TAG).clone(), count));
          return;
        }
        Candidate worst = heap.peek();
        UTF8String tag = row.getUTF8String(TAG);
        boolean better =
            count > worst.count() || count == worst.count() && tag.binaryCompare(worst.tag()) < 0;
        if (better) {
          heap.poll();
          heap.add(new Candidate(start, tag.clone(), count));
        }
      }
    };
  }

  /** A window-count row; better is a higher count, then a smaller tag (UTF-8 bytes). */
  private record Candidate(long start, UTF8String tag, long count) {
    static final Comparator<Candidate> WORSE_FIRST =
        Comparator.comparingLong(Candidate::count)
            .thenComparing(Candidate::tag, (a, b) -> b.binaryCompare(a));
  }

  private static byte[] pack(Map<Long, PriorityQueue<Candidate>> best) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try (DataOutputStream packed = new DataOutputStream(bytes)) {
      for (PriorityQueue<Candidate> heap : best.values()) {
        for (Candidate c : heap) {
          packed.writeLong(c.start());
          byte[] tag = c.tag().getBytes();
          packed.writeInt(tag.length);
          packed.write(tag);
          packed.writeLong(c.count());
        }
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e); // a ByteArrayOutputStream does not fail
    }
    return bytes.toByteArray();
  }

  private static boolean isCounted(Object part) {
    return part instanceof byte[];
  }

  private static byte[] concat(List<Object> chunks) {
    ByteArrayOutputStream all = new ByteArrayOutputStream();
    for (Object chunk : chunks) {
      all.writeBytes((byte[]) chunk);
    }
    return all.toByteArray();
  }
}
