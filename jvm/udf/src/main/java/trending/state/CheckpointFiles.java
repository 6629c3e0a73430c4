package trending.state;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitLog;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadata;
import org.apache.spark.sql.execution.streaming.checkpointing.OffsetSeq;
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
  private final FileSystem fs;

  public CheckpointFiles(SparkSession spark, String location) {
    this.spark = spark;
    // the configuration Spark's streaming queries write their checkpoints with (its SQL
    // settings included, such as the checkpoint file manager), so both go through one manager
    Configuration conf = spark.sessionState().newHadoopConf();
    Path path = new Path(location);
    try {
      this.fs = path.getFileSystem(conf);
      this.root = fs.makeQualified(path);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot use checkpoint location " + location + ": " + e, e);
    }
    this.files = CheckpointFileManager.create(root, conf);
  }

  /** The qualified URI of {@code child} under the checkpoint (the root for an empty name). */
  public String uri(String child) {
    return (child.isEmpty() ? root : new Path(root, child)).toString();
  }

  /**
   * The text of {@code child}, or null when it does not exist. A file that another process
   * replaces ({@link #writeText}) can be missing for a moment, also between the check and the
   * open: that reads as missing too, never as an error.
   */
  public String readText(String child) throws IOException {
    Path path = new Path(root, child);
    if (!files.exists(path)) {
      return null;
    }
    try (InputStream in = files.open(path)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (FileNotFoundException e) {
      return null;
    }
  }

  /** Writes {@code child} whole or not at all (never overwrites an existing file). */
  public void writeTextAtomically(String child, String text) throws IOException {
    files.mkdirs(root);
    try (OutputStream out = files.createAtomic(new Path(root, child), false)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** Replaces {@code child} with {@code text}, whole or not at all. */
  public void writeText(String child, String text) throws IOException {
    try (OutputStream out = files.createAtomic(new Path(root, child), true)) {
      out.write(text.getBytes(StandardCharsets.UTF_8));
    }
  }

  /**
   * Creates {@code child} with {@code text} unless it exists, atomically: of two callers racing
   * for one name exactly one gets true. A local file is linked into place (link(2) fails when
   * the name exists); elsewhere the store's create-if-absent is used (atomic on HDFS and ABFS;
   * through S3A it is a check then a write).
   */
  public boolean createExclusively(String child, String text) throws IOException {
    Path path = new Path(root, child);
    fs.mkdirs(path.getParent());
    byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
    if ("file".equals(root.toUri().getScheme())) {
      java.nio.file.Path target = Paths.get(path.toUri());
      java.nio.file.Path draft = Files.createTempFile(target.getParent(), ".draft-", ".tmp");
      try {
        Files.write(draft, bytes);
        Files.createLink(target, draft);
        return true;
      } catch (java.nio.file.FileAlreadyExistsException e) {
        return false;
      } finally {
        Files.deleteIfExists(draft);
      }
    }
    try (FSDataOutputStream out = fs.create(path, false)) {
      out.write(bytes);
      return true;
    } catch (FileAlreadyExistsException e) {
      return false;
    }
  }

  /** The names of the files in folder {@code child} (none when it does not exist). */
  public String[] list(String child) throws IOException {
    try {
      FileStatus[] statuses = fs.listStatus(new Path(root, child));
      String[] names = new String[statuses.length];
      for (int i = 0; i < statuses.length; i++) {
        names[i] = statuses[i].getPath().getName();
      }
      return names;
    } catch (FileNotFoundException e) {
      return new String[0];
    }
  }

  /** Deletes file {@code child} if it exists. */
  public void delete(String child) throws IOException {
    fs.delete(new Path(root, child), false);
  }

  /** The newest batch id in Spark's offset log under {@code query}, or -1. */
  public long lastPlanned(String query) {
    return latest(offsetLog(query).getLatestBatchId());
  }

  /**
   * Spark's clock for {@code batch} of the query under {@code query}: the batch timestamp in its
   * offset log entry, which {@code current_timestamp()} is in that batch, and again when the
   * batch runs again after a restart.
   */
  public long batchTimestampMs(String query, long batch) {
    Option<OffsetSeq> entry = offsetLog(query).get(batch);
    if (entry.isEmpty() || entry.get().metadata().isEmpty()) {
      throw new IllegalStateException(
          "batch " + batch + " has no offset log entry with a timestamp under " + uri(query));
    }
    return entry.get().metadata().get().batchTimestampMs();
  }

  /**
   * Spark's offset log of the query under {@code query}, opened anew on each call: a log object
   * caches the entries it read, and entries after a batch may be purged and planned again.
   */
  private OffsetSeqLog offsetLog(String query) {
    return new OffsetSeqLog(spark, uri(query + "/offsets"));
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
    offsetLog(query).purgeAfter(batch);
  }

  private static long latest(Option<Object> batch) {
    return batch.isDefined() ? (Long) batch.get() : -1L;
  }
}
