package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.LocalDiskFullException;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import java.util.Locale;
import org.rocksdb.DBOptions;
import org.rocksdb.RocksDBException;
import org.rocksdb.Status;

/**
 * The disk space of one store's local directory: tells a write that failed for lack of space from
 * any other failure, and reports it as a {@link LocalDiskFullException} naming the directory and
 * the setting that placed it. Every local write of the store (RocksDB's, and a restore's copies)
 * goes through a check of this class on failure, so the error says the same thing wherever the disk
 * filled.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class LocalSpace {
  /**
   * RocksDB's words for its space limit ({@code Status::SpaceLimit}, which RocksJava 9 leaves
   * unnamed).
   */
  private static final String ROCKSDB_SPACE_LIMIT = "max allowed space was reached";

  private final String storeName;
  private final Path dir;
  private final String setting;
  private final LocalSpaceLimit limit; // tests only; null otherwise

  private LocalSpace(String storeName, Path dir, String setting, LocalSpaceLimit limit) {
    this.storeName = storeName;
    this.dir = dir;
    this.setting = setting;
    this.limit = limit;
  }

  /**
   * The space of store {@code storeName}'s local directory {@code dir}, placed by {@code setting}
   * (a configuration key, or a description of who chose the directory), in {@code resources}'s
   * process.
   */
  public static LocalSpace of(
      String storeName, Path dir, String setting, ProcessResources resources) {
    return new LocalSpace(storeName, dir, setting, LocalSpaceLimit.ifPresent(resources));
  }

  /** For tests of single instances: no setting to name, no limit. */
  public static LocalSpace unmanaged(String storeName, Path dir) {
    return new LocalSpace(storeName, dir, "the caller's choice of directory", null);
  }

  public Path dir() {
    return dir;
  }

  /** Whether {@code e}, or one of its causes, is a write that found no room. */
  public static boolean isOutOfSpace(Throwable e) {
    for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
      if (t instanceof RocksDBException r) {
        Status status = r.getStatus();
        if (status != null && status.getSubCode() == Status.SubCode.NoSpace) {
          return true;
        }
      }
      if (t instanceof RocksDBException || t instanceof IOException) {
        String message =
            t instanceof FileSystemException f && f.getReason() != null
                ? f.getReason()
                : String.valueOf(t.getMessage());
        String m = message.toLowerCase(Locale.ROOT);
        if (m.contains(LocalSpaceLimit.NO_SPACE.toLowerCase(Locale.ROOT))
            || m.contains("disk quota exceeded")
            || m.contains(ROCKSDB_SPACE_LIMIT)) {
          return true;
        }
      }
    }
    return false;
  }

  /**
   * The disk-full error of {@code what} (a step: "apply version 7", "restore snapshot 4") if {@code
   * cause} is a lack of space, else null.
   */
  public LocalDiskFullException diskFullOrNull(String what, Throwable cause) {
    if (!isOutOfSpace(cause)) {
      return null;
    }
    return new LocalDiskFullException(
        "Local disk full: "
            + what
            + " of store "
            + storeName
            + " failed because its local directory "
            + dir
            + " is out of space ("
            + cause
            + "). Nothing durable was written by this step: the local instance is discarded and"
            + " rebuilt from durable storage when the task is retried. Free space there, or move"
            + " the local directories to a disk with room ("
            + setting
            + ")",
        dir,
        cause);
  }

  /** Lets the instance count against a test's limit, if there is one. */
  void attach(DBOptions options) {
    if (limit != null) {
      limit.attach(options);
    }
  }

  /** Fails as a full disk would if a test's limit leaves no room for {@code bytes} more. */
  public void checkRoomFor(Path target, long bytes) throws IOException {
    if (limit != null) {
      limit.checkRoomFor(target, bytes);
    }
  }
}
