package trending.sensors;

import static org.apache.spark.sql.functions.col;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.UUID;
import java.util.function.BiConsumer;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.util.LongAccumulator;
import trending.udf.BatchValue;

/**
 * One micro-batch of the sensor job on the executors, for Python. Given the batch's on-time
 * events (layout {@link Events#EVENT}) and the watermark {@code W} it runs under:
 *
 * <ol>
 *   <li>events with {@code ts >= W} wait in the pending store; those with {@code ts < W}, new or
 *       waiting, are applied now, in order key order;
 *   <li>readings are numbered in their window: globally (a range-partitioned sort, per-partition
 *       counts to the driver, then each partition numbers from its base) or per sensor (in the
 *       store partition that owns the sensor); reading {@code s} evicts reading {@code s - N};
 *   <li>the window index turns each eviction into a notice to the evicted reading's cell;
 *   <li>each cell applies its readings, notices and query probes (see {@link Cells}).
 * </ol>
 *
 * Three state stores (pending, index, cells) each go from version {@code batchId} to
 * {@code batchId + 1}. The output (matches and popular readings, {@link Cells#OUTPUT}) is cached
 * until {@link #release}.
 */
public final class SensorBatch {
  static final long PENDING = 0, INDEX = 1, CELLS = 2; // operator ids of the stores
  private static final StorageLevel CACHE = StorageLevel.MEMORY_AND_DISK();
  private static final String ADAPTIVE = "spark.sql.adaptive.enabled";

  private final SparkSession spark;
  private final StateStores stores;
  private final long size;
  private final int threshold;
  private final Grid grid;
  private final boolean perSensor;
  private final long maxQueryCells;
  private final long[] routes;
  private final LongAccumulator readings, queries, matches, popular, pending, written;
  private final List<Runnable> cached = new ArrayList<>();

  public SensorBatch(org.apache.spark.sql.SparkSession session, String location, int partitions,
      long size, int threshold, double cellSize, boolean perSensor, long maxQueryCells,
      String job) {
    this.spark = (SparkSession) session;
    this.stores = new StateStores(location, UUID.randomUUID(), partitions);
    this.size = size;
    this.threshold = threshold;
    this.grid = new Grid(cellSize);
    this.perSensor = perSensor;
    this.maxQueryCells = maxQueryCells;
    this.routes = Routes.of(partitions);
    org.apache.spark.SparkContext context = spark.sparkContext();
    readings = context.longAccumulator("sensors-readings-" + job);
    queries = context.longAccumulator("sensors-queries-" + job);
    matches = context.longAccumulator("sensors-matches-" + job);
    popular = context.longAccumulator("sensors-popular-" + job);
    pending = context.longAccumulator("sensors-pending-" + job);
    written = context.longAccumulator("sensors-state-bytes-" + job);
  }

  /**
   * Runs the batch; returns its output, cached. {@code readingsBefore}: readings the global window
   * numbered so far; {@code minX..maxY}: bounds of every reading position ever seen (NaN: none).
   */
  public Dataset<Row> run(Dataset<Row> events, long batchId, long watermarkMs,
      long readingsBefore, double minX, double minY, double maxX, double maxY) {
    // With adaptive execution, each Dataset turned into an RDD below runs its shuffle's map
    // stage at once, as a Spark job of its own; without it the shuffles are stages of the jobs
    // that need them: 11 Spark jobs a micro-batch instead of 17. Only the micro-batch's session
    // (on which every Dataset below is built) goes without it, and only while they are built
    // and run: the job's own session, which other queries may share, is left alone.
    org.apache.spark.sql.RuntimeConfig conf = events.sparkSession().conf();
    String before = conf.get(ADAPTIVE, null);
    conf.set(ADAPTIVE, false);
    try {
      return runStores(events, batchId, watermarkMs, readingsBefore, minX, minY, maxX, maxY);
    } finally {
      if (before == null) {
        conf.unset(ADAPTIVE);
      } else {
        conf.set(ADAPTIVE, before);
      }
    }
  }

  private Dataset<Row> runStores(Dataset<Row> events, long batchId, long watermarkMs,
      long readingsBefore, double minX, double minY, double maxX, double maxY) {
    for (LongAccumulator a : List.of(readings, queries, matches, popular, pending, written)) {
      a.reset();
    }
    int[] extent = Double.isNaN(minX) ? null
        : new int[] {grid.coordinate(minX), grid.coordinate(minY), grid.coordinate(maxX),
            grid.coordinate(maxY)};
    Dataset<Row> all = events.select("kind", "ts", "partition", "offset", "id", "x", "y", "v");
    Column watermark = BatchValue.ofLong(watermarkMs); // the same generated code every batch
    Dataset<Row> now = all.where(col("ts").lt(watermark));
    Dataset<Row> later = all.where(col("ts").geq(watermark));
    JavaRDD<Row> released = cache(stores.run(spark,
        later.repartition(stores.partitions(), col("partition"), col("offset")).javaRDD(),
        PENDING, batchId, PendingEvents.KEY, 0, PendingEvents.VALUE,
        new PendingEvents(watermarkMs, pending, written), Row.class, Row.class));
    released.count();
    Dataset<Row> applicable =
        now.union(events.sparkSession().createDataFrame(released, Events.EVENT));
    JavaRDD<Row> cellInput = perSensor
        ? perSensorInput(applicable, batchId, extent)
        : globalInput(applicable, batchId, readingsBefore, extent);
    JavaRDD<Row> byCell = events.sparkSession().createDataFrame(cellInput, CellInput.SCHEMA)
        .repartition(stores.partitions(), col("cell")).javaRDD();
    JavaRDD<Row> output = stores.run(spark, byCell, CELLS, batchId, CellReading.KEY, 1,
        CellReading.VALUE, new Cells(threshold, matches, popular, written), Row.class, Row.class);
    Dataset<Row> result =
        events.sparkSession().createDataFrame(output, Cells.OUTPUT).persist(CACHE);
    cached.add(result::unpersist);
    result.count();
    return result;
  }

  /** The global window: numbering by a sorted pass, index rows spread by number. */
  private JavaRDD<Row> globalInput(Dataset<Row> applicable, long batchId, long readingsBefore,
      int[] extent) {
    JavaRDD<Row> ordered = cache(applicable
        .repartitionByRange(stores.partitions(), col("ts"), col("kind"), col("partition"),
            col("offset"))
        .sortWithinPartitions("ts", "kind", "partition", "offset").javaRDD());
    List<long[]> counts = ordered.mapPartitions(SensorBatch::countKinds).collect();
    long[] bases = new long[counts.size()];
    long next = readingsBefore;
    for (int i = 0; i < bases.length; i++) {
      bases[i] = next;
      next += counts.get(i)[Events.READING];
      readings.add(counts.get(i)[Events.READING]);
      queries.add(counts.get(i)[Events.QUERY]);
    }
    Grid grid = this.grid;
    long size = this.size, maxCells = this.maxQueryCells;
    long[] routes = this.routes;
    JavaRDD<Row> cellRows = ordered.mapPartitionsWithIndex((part, rows) -> {
      List<Row> out = new ArrayList<>();
      numbered(rows, bases[part], (e, seq) -> {
        if (seq > 0) {
          out.add(CellInput.reading(e, grid, 0L, seq));
        } else {
          CellInput.probes(e, grid, extent, maxCells, routes, out::add);
        }
      });
      return out.iterator();
    }, true);
    JavaRDD<Row> operations = ordered.mapPartitionsWithIndex((part, rows) -> {
      List<Row> out = new ArrayList<>();
      numbered(rows, bases[part], (e, seq) -> {
        if (seq == 0) return;
        out.add(WindowIndex.put(seq, grid.cell(e.getDouble(Events.X), e.getDouble(Events.Y))));
        if (seq > size) {
          out.add(WindowIndex.evict(seq - size, e.getLong(Events.TS),
              e.getInt(Events.PARTITION), e.getLong(Events.OFFSET)));
        }
      });
      return out.iterator();
    }, true);
    JavaRDD<Row> bySeq = applicable.sparkSession()
        .createDataFrame(operations, WindowIndex.OPERATION)
        .repartition(stores.partitions(), col("seq")).javaRDD();
    JavaRDD<Row> notices = stores.run(spark, bySeq, INDEX, batchId, WindowIndex.KEY, 0,
        WindowIndex.VALUE, new WindowIndex.Global(written), Row.class, Row.class);
    return cellRows.union(notices);
  }

  /** Windows per sensor: numbering and index in the store partition owning the sensor. */
  private JavaRDD<Row> perSensorInput(Dataset<Row> applicable, long batchId, int[] extent) {
    JavaRDD<Row> bySensor = applicable.where(col("kind").equalTo(Events.READING))
        .repartition(stores.partitions(), col("id")).javaRDD();
    JavaRDD<Row> fromIndex = stores.run(spark, bySensor, INDEX, batchId, WindowIndex.KEY, 0,
        WindowIndex.VALUE, new WindowIndex.PerSensor(size, grid, written), Row.class, Row.class);
    Grid grid = this.grid;
    long maxCells = this.maxQueryCells;
    long[] routes = this.routes;
    LongAccumulator readingCount = readings, queryCount = queries;
    JavaRDD<Row> probes = applicable.javaRDD().mapPartitions(rows -> {
      List<Row> out = new ArrayList<>();
      while (rows.hasNext()) {
        Row e = rows.next();
        if (Events.kind(e) == Events.QUERY) {
          queryCount.add(1);
          CellInput.probes(e, grid, extent, maxCells, routes, out::add);
        } else {
          readingCount.add(1);
        }
      }
      return out.iterator();
    });
    return fromIndex.union(probes);
  }

  /** Events in order, readings numbered from {@code base + 1} (a query gets 0). */
  private static void numbered(Iterator<Row> rows, long base, BiConsumer<Row, Long> visit) {
    long seq = base;
    while (rows.hasNext()) {
      Row e = rows.next();
      visit.accept(e, Events.kind(e) == Events.READING ? ++seq : 0L);
    }
  }

  private static Iterator<long[]> countKinds(Iterator<Row> rows) {
    long[] counts = new long[2];
    while (rows.hasNext()) counts[Events.kind(rows.next())]++;
    return List.of(counts).iterator();
  }

  private JavaRDD<Row> cache(JavaRDD<Row> rdd) {
    JavaRDD<Row> kept = rdd.persist(CACHE);
    cached.add(() -> kept.unpersist(false));
    return kept;
  }

  /** Drops what the last {@link #run} cached. */
  public void release() {
    cached.forEach(Runnable::run);
    cached.clear();
  }

  public long readingsApplied() {
    return readings.value();
  }

  public long queriesApplied() {
    return queries.value();
  }

  public long matchCount() {
    return matches.value();
  }

  public long popularCount() {
    return popular.value();
  }

  public long pendingCount() {
    return pending.value();
  }

  /** Bytes of the keys and values the batch put into its state stores and of the keys removed. */
  public long stateBytesWritten() {
    return written.value();
  }
}
