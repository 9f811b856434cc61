package io.streamstate.spark.checkpoint;

import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;

/**
 * The exception the manager's callers get for a taken name: Hadoop's {@code
 * FileAlreadyExistsException}, which Spark's {@code HDFSMetadataLog} reports as "concurrent queries
 * on one checkpoint" (the storage layer's own is {@code io.streamstate.core.error}'s).
 */
final class TakenNames {
  private TakenNames() {}

  /** The name is taken, as a create of it finds. */
  static FileAlreadyExistsException exists(Path path) {
    return new FileAlreadyExistsException(path + " already exists");
  }

  /** The name was taken by another writer first; {@code cause} says how the store told us. */
  static FileAlreadyExistsException nameTaken(Path path, Throwable cause) {
    FileAlreadyExistsException e =
        new FileAlreadyExistsException(path + " already exists (another writer created it first)");
    e.initCause(cause);
    return e;
  }
}
