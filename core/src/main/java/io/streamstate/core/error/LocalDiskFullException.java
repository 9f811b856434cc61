package io.streamstate.core.error;

import java.nio.file.Path;

/**
 * A store's local directory ran out of space while the local instance was written (RocksDB's
 * writes, flushes and compactions, a snapshot's local checkpoint, a restore's copies). Nothing
 * durable was written by the failed step; the local instance is discarded and rebuilt from durable
 * storage by the next load, so the task may be retried once there is room.
 */
public class LocalDiskFullException extends RetryableException {
  private static final long serialVersionUID = 1L;

  private final transient Path localDir;

  public LocalDiskFullException(String message, Path localDir, Throwable cause) {
    super(message, cause);
    this.localDir = localDir;
  }

  /** The local directory that is out of space (null after deserialization). */
  public Path localDir() {
    return localDir;
  }
}
