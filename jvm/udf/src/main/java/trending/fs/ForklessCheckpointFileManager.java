package trending.fs;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;

/**
 * Spark's checkpoint file manager ({@code spark.sql.streaming.checkpointFileManagerClass}) as
 * Spark chooses it for {@code path}, with {@code file:} paths on {@link ForklessLocalFs} instead
 * of Hadoop's {@code LocalFs}: the same files, renames and checksums, without the child processes
 * Hadoop's local file system runs per file when its native library is missing. Other schemes
 * ({@code hdfs:}, {@code s3a:}, ...) get exactly Spark's own manager.
 */
public final class ForklessCheckpointFileManager implements CheckpointFileManager {
  /** The setting that names this class to Spark. */
  public static final String CLASS_KEY = "spark.sql.streaming.checkpointFileManagerClass";

  private static final String LOCAL_FS_KEY = "fs.AbstractFileSystem.file.impl";
  private final CheckpointFileManager files;

  public ForklessCheckpointFileManager(Path path, Configuration conf) {
    Configuration own = new Configuration(conf);
    own.unset(CLASS_KEY);
    if (conf.get(LOCAL_FS_KEY, "").equals("org.apache.hadoop.fs.local.LocalFs")) {
      own.setClassLoader(ForklessLocalFs.class.getClassLoader());
      own.set(LOCAL_FS_KEY, ForklessLocalFs.class.getName());
    }
    this.files = CheckpointFileManager.create(path, own);
  }

  @Override
  public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
    return files.createAtomic(path, overwriteIfPossible);
  }

  @Override
  public FSDataInputStream open(Path path) {
    return files.open(path);
  }

  @Override
  public FileStatus[] list(Path path, PathFilter filter) {
    return files.list(path, filter);
  }

  @Override
  public FileStatus[] list(Path path) {
    return files.list(path);
  }

  @Override
  public void mkdirs(Path path) {
    files.mkdirs(path);
  }

  @Override
  public boolean exists(Path path) {
    return files.exists(path);
  }

  @Override
  public void delete(Path path) {
    files.delete(path);
  }

  @Override
  public boolean isLocal() {
    return files.isLocal();
  }

  @Override
  public Path createCheckpointDirectory() {
    return files.createCheckpointDirectory();
  }

  @Override
  public void close() {
    files.close();
  }

}
