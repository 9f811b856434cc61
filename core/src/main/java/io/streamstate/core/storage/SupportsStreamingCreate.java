package io.streamstate.core.storage;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;

/**
 * A {@link Storage} whose create can hand out the new file as a stream before its content is known
 * (Spark's {@code createAtomic}, which returns a stream its caller writes, of any length). It is
 * the same create as {@link Storage#create}, which implementations build on it: one implementation
 * of create-if-absent per store (docs/protocol.md, "Create-if-absent per store").
 */
public interface SupportsStreamingCreate {
  /**
   * Starts the new file {@code name}. Stores that take a name at create (local disk, HDFS, single
   * writer) take it here; stores that publish at completion (conditional create) check it at {@link
   * PendingFile#publish()}.
   *
   * @param overwrite replace a file at {@code name} instead of refusing it (no create-if-absent:
   *     Spark's {@code createAtomic(path, overwriteIfPossible=true)})
   * @throws FileAlreadyExistsException the name exists ({@code overwrite} false, a store that takes
   *     names at create)
   * @throws RetryableException nothing was created
   * @throws OutcomeUnknownException the name may now be taken by this call (a create request that
   *     timed out)
   */
  PendingFile openNew(String name, boolean overwrite);
}
