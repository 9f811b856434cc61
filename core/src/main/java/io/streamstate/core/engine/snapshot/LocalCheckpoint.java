package io.streamstate.core.engine.snapshot;

import io.streamstate.core.engine.local.LocalInstance;
import java.nio.file.Path;
import java.util.Map;

/**
 * A local checkpoint of one committed version (step s1), under upload. Its directory is deleted
 * when its last user lets go: the upload, and every create still reading its files (a hedged create
 * that lost may outlive the upload).
 */
final class LocalCheckpoint {
  final long version;
  final long commitId;
  final int generation;
  final Map<String, String> confirmed;
  final Path dir;
  private final Runnable afterDelete;
  private int users = 1; // guarded by this

  /**
   * Checkpoints {@code local} (flush and hard links) into a scratch directory; holds exactly the
   * version the instance holds, so the caller holds the store's lock (I10).
   */
  static LocalCheckpoint of(LocalInstance local) {
    Path dir = local.checkpoint();
    return new LocalCheckpoint(
        local.version(),
        local.commitId(),
        local.generation(),
        local.confirmedSsts(),
        dir,
        local::checkpointReleased);
  }

  LocalCheckpoint(
      long version,
      long commitId,
      int generation,
      Map<String, String> confirmed,
      Path dir,
      Runnable afterDelete) {
    this.version = version;
    this.commitId = commitId;
    this.generation = generation;
    this.confirmed = confirmed;
    this.dir = dir;
    this.afterDelete = afterDelete;
  }

  /** Takes a use of the directory; false if it is gone already. */
  synchronized boolean retain() {
    if (users == 0) {
      return false;
    }
    users++;
    return true;
  }

  /** Ends a use; the last one deletes the directory. */
  void release() {
    boolean last;
    synchronized (this) {
      last = --users == 0;
    }
    if (last) {
      LocalInstance.deleteRecursively(dir);
      afterDelete.run();
    }
  }
}
