package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.io.IOException;
import java.nio.file.FileSystemException;
import java.nio.file.Path;
import org.rocksdb.DBOptions;
import org.rocksdb.Env;
import org.rocksdb.RocksDBException;
import org.rocksdb.SstFileManager;

/**
 * Tests only: a limit on the local disk space of a process's stores (a component of its {@link
 * ProcessResources}), so that a test can run the local directories out of space without a small
 * file system (which needs privileges to mount). Absent unless a test asks for it; production never
 * makes one.
 *
 * <p>RocksDB's side is RocksDB's own limit: one {@link SstFileManager} that the instances opened
 * after {@link #trackForTests} share; past its limit RocksDB fails flushes and compactions with a
 * space-limit background error, the path a full disk takes ("No space left on device"), and the
 * instance then refuses every write until it is closed. Our own local writes (a restore's copies)
 * ask {@link #checkRoomFor} first, which fails as a full disk fails a write.
 */
public final class LocalSpaceLimit implements AutoCloseable {
  /** What the JDK says when a write meets ENOSPC. */
  static final String NO_SPACE = "No space left on device";

  private final SstFileManager sstFileManager;
  private volatile long maxBytes; // 0: no limit

  private LocalSpaceLimit() {
    try {
      this.sstFileManager = new SstFileManager(Env.getDefault());
    } catch (RocksDBException e) {
      throw new IllegalStateException("Cannot make RocksDB's SstFileManager: " + e, e);
    }
  }

  /**
   * Tests only: the limit of {@code resources}'s process, made (with no limit yet) if absent.
   * RocksDB instances opened from now on count against it.
   */
  public static LocalSpaceLimit trackForTests(ProcessResources resources) {
    return resources.component(LocalSpaceLimit.class, LocalSpaceLimit::new);
  }

  /** The limit of {@code resources}'s process, or null (always, outside tests). */
  static LocalSpaceLimit ifPresent(ProcessResources resources) {
    return resources.componentIfPresent(LocalSpaceLimit.class);
  }

  /**
   * Tests only: from now on the tracked instances' SST files may take at most {@code bytes} (at
   * least 1) in all: more and RocksDB's flushes fail, as do our copies into local directories.
   */
  public void limitForTests(long bytes) {
    if (bytes < 1) {
      throw new IllegalArgumentException("bytes must be >= 1: " + bytes);
    }
    maxBytes = bytes;
    sstFileManager.setMaxAllowedSpaceUsage(bytes);
  }

  /** Tests only: space returns (instances already in RocksDB's error state stay there). */
  public void liftForTests() {
    maxBytes = 0;
    sstFileManager.setMaxAllowedSpaceUsage(0);
  }

  /** The tracked instances' SST bytes. */
  public long usedBytes() {
    return sstFileManager.getTotalSize();
  }

  void attach(DBOptions options) {
    options.setSstFileManager(sstFileManager);
  }

  /** Fails as a full disk fails a write if {@code bytes} more would pass the limit. */
  void checkRoomFor(Path target, long bytes) throws IOException {
    long max = maxBytes;
    if (max > 0 && usedBytes() + bytes > max) {
      throw new FileSystemException(target.toString(), null, NO_SPACE);
    }
  }

  @Override
  public void close() {
    sstFileManager.close();
  }
}
