package trending.state;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitLog;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadata;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeqLog;
import scala.Option;

/**
 * A job's checkpoint at any path Spark accepts ({@code /dir}, {@code file://}, {@code hdfs://},
 * {@code s3a://}), through Hadoop's FileSystem API and Spark's own checkpoint classes: small
 * files written atomically ({@link CheckpointFileManager#createAtomic}), and Spark's offset and
 * commit logs of a query read and settled.
 */
public final class CheckpointFiles {
  private final SparkSession spark;
  private final Path root;
  private final CheckpointFileManager files;

  public CheckpointFiles(SparkSession spark, String location) {
    this.spark = spark;
    Configuration conf = spark.sparkContext().hadoopConfiguration();
    Path path = new Path(location);
    try {
      this.root = path.getFileSystem(conf).makeQualified(path);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot use checkpoint location " + location + ": " + e, e);
    }
    this.files = CheckpointFileManager.create(root, conf);
  }

  /** The qualified URI of {@code child} under the checkpoint (the root for an empty name). */
  public String uri(String child) {
    return (child.isEmpty() ? root : new Path(root, child)).toString();
  }

  /** The text of {@code child}, or null when it does not exist. */
  public String readText(String child) throws IOException {
    Path path = new Path(root, child);
    if (!files.exists(path)) {
      return null;
    }
    try (InputStream in = files.open(path)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /** Writes {@code child} whole or not at all (never overwrites an existing file). */
  public void writeTextAtomically(String child, String text) throws IOException {
    files.mkdirs(root);
    try (OutputStream out = files.createAtomic(new Path(root, child), false)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** The newest batch id in Spark's offset log under {@code query}, or -1. */
  public long lastPlanned(String query) {
    return latest(new OffsetSeqLog(spark, uri(query + "/offsets")).getLatestBatchId());
  }

  /** The newest batch id in Spark's commit log under {@code query}, or -1. */
  public long lastDone(String query) {
    return latest(new CommitLog(spark, uri(query + "/commits")).getLatestBatchId());
  }

  /** Records {@code batch} as done in Spark's commit log, as Spark does after its sink. */
  public void markDone(String query, long batch, long nextBatchWatermarkMs) {
    new CommitLog(spark, uri(query + "/commits"))
        .add(batch, new CommitMetadata(nextBatchWatermarkMs, Option.empty()));
  }

  /** Removes every planned batch after {@code batch} from Spark's offset log. */
  public void forgetPlannedAfter(String query, long batch) {
    new OffsetSeqLog(spark, uri(query + "/offsets")).purgeAfter(batch);
  }

  private static long latest(Option<Object> batch) {
    return batch.isDefined() ? (Long) batch.get() : -1L;
  }
}
