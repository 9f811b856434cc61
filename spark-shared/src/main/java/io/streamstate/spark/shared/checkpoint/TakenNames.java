package io.streamstate.spark.shared.checkpoint;

import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;

/**
 * The exception the manager's callers get for a taken name: Hadoop's {@code
 * FileAlreadyExistsException}, which Spark's {@code HDFSMetadataLog} reports as "concurrent queries
 * on one checkpoint" (the storage layer's own is {@code io.streamstate.core.error}'s).
 *
 * <p>Public for the adapters' checkpoint file manager ({@code io.streamstate.spark.checkpoint});
 * not an API.
 */
public final class TakenNames {
  private TakenNames() {}

  /** The name is taken, as a create of it finds. */
  public static FileAlreadyExistsException exists(Path path) {
    return new FileAlreadyExistsException(path + " already exists");
  }

  /** The name was taken by another writer first; {@code cause} says how the store told us. */
  public static FileAlreadyExistsException nameTaken(Path path, Throwable cause) {
    FileAlreadyExistsException e =
        new FileAlreadyExistsException(path + " already exists (another writer created it first)");
    e.initCause(cause);
    return e;
  }
}
