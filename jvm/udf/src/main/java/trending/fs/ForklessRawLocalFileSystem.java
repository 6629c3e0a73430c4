package trending.fs;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsAction;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.io.nativeio.NativeIO;

/**
 * Hadoop's local file system without a child process per file. Without Hadoop's native library
 * (the pyspark wheel has none), {@link RawLocalFileSystem} runs {@code chmod} for every file it
 * creates with a permission and {@code readlink} for every link status, which Spark's checkpoint
 * file manager asks for on every create and rename: about 35 ms per checkpoint file, several
 * files per micro-batch. Here both go through {@code java.nio}, with the same results: the
 * permission bits set, and a symbolic link still resolved by Hadoop's own code.
 */
public class ForklessRawLocalFileSystem extends RawLocalFileSystem {

  @Override
  public void setPermission(Path path, FsPermission permission) throws IOException {
    File file = pathToFile(path);
    PosixFileAttributeView view =
        NativeIO.isAvailable() || permission.getStickyBit()
            ? null // the native call, or chmod for the bit java.nio cannot set
            : Files.getFileAttributeView(file.toPath(), PosixFileAttributeView.class);
    if (view == null) {
      super.setPermission(path, permission);
      return;
    }
    view.setPermissions(posix(permission));
  }

  /**
   * The status of {@code path} itself. Hadoop asks {@code readlink} about
   * {@code new File(path.toString())}; when that names no symbolic link, its answer is the file's
   * status, which this returns without the child process.
   */
  @Override
  public FileStatus getFileLinkStatus(Path path) throws IOException {
    if (Files.isSymbolicLink(new File(path.toString()).toPath())) {
      return super.getFileLinkStatus(path);
    }
    return getFileStatus(path);
  }

  /** The POSIX permission set of Hadoop's {@code permission}, but its sticky bit. */
  static Set<PosixFilePermission> posix(FsPermission permission) {
    Set<PosixFilePermission> bits = EnumSet.noneOf(PosixFilePermission.class);
    add(bits, permission.getUserAction(), PosixFilePermission.OWNER_READ,
        PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_EXECUTE);
    add(bits, permission.getGroupAction(), PosixFilePermission.GROUP_READ,
        PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_EXECUTE);
    add(bits, permission.getOtherAction(), PosixFilePermission.OTHERS_READ,
        PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_EXECUTE);
    return bits;
  }

  private static void add(
      Set<PosixFilePermission> bits,
      FsAction action,
      PosixFilePermission read,
      PosixFilePermission write,
      PosixFilePermission execute) {
    if (action.implies(FsAction.READ)) {
      bits.add(read);
    }
    if (action.implies(FsAction.WRITE)) {
      bits.add(write);
    }
    if (action.implies(FsAction.EXECUTE)) {
      bits.add(execute);
    }
  }

}
