import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import trending.fs.ForklessCheckpointFileManager;

/**
 * Writes checkpoint files the way Spark's streaming logs do, through one checkpoint file manager:
 * {@code spark} (Spark's own choice for the path) or {@code forkless}
 * ({@code trending.fs.ForklessCheckpointFileManager}).
 *
 * <p>Usage: {@code CheckpointFilesProbe spark|forkless <folder URI>}. In the folder: {@code 0}
 * written, {@code 0} written again over it, {@code 1} written and cancelled (never there). Prints
 * what {@code 0} holds and whether {@code 1} exists; exits non-zero on any failure.
 */
public final class CheckpointFilesProbe {
  public static void main(String[] args) throws Exception {
    Configuration conf = new Configuration();
    Path folder = new Path(args[1]);
    CheckpointFileManager files =
        args[0].equals("forkless")
            ? new ForklessCheckpointFileManager(folder, conf)
            : CheckpointFileManager.create(folder, conf);
    files.mkdirs(folder);
    write(files, new Path(folder, "0"), "v1\nfirst", false);
    write(files, new Path(folder, "0"), "v1\nsecond", true);
    CheckpointFileManager.CancellableFSDataOutputStream cancelled =
        files.createAtomic(new Path(folder, "1"), false);
    cancelled.write("never".getBytes(StandardCharsets.UTF_8));
    cancelled.cancel();
    try (FSDataInputStream in = files.open(new Path(folder, "0"))) {
      System.out.println(new String(in.readAllBytes(), StandardCharsets.UTF_8));
    }
    System.out.println("1 exists: " + files.exists(new Path(folder, "1")));
  }

  private static void write(CheckpointFileManager files, Path path, String text, boolean over) {
    CheckpointFileManager.CancellableFSDataOutputStream out = files.createAtomic(path, over);
    try {
      out.write(text.getBytes(StandardCharsets.UTF_8));
      out.close();
    } catch (java.io.IOException e) {
      out.cancel();
      throw new java.io.UncheckedIOException(e);
    }
  }
}
