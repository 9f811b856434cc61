package io.streamstate.spark;

import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.errors.QueryExecutionErrors;

/**
 * The errors a load raises on Spark 4.x, with Spark's error classes, as its RocksDB provider raises
 * them ({@code RocksDBStateStoreProvider.loadStateStore}, {@code
 * StateStoreErrors.cannotLoadStore}): Spark's store contract ({@code StateStoreSuiteBase}) and
 * users match on them. Our own message, naming the file and what is wrong, is the cause.
 *
 * <p>Spark's {@code SparkException} is a checked exception that Scala code throws undeclared; each
 * method throws it the same way and never returns (callers write {@code throw LoadErrors.x(..)}).
 */
final class LoadErrors {
  private LoadErrors() {}

  /** A negative version: {@code CANNOT_LOAD_STATE_STORE.UNEXPECTED_VERSION}. */
  static RuntimeException unexpectedVersion(long version) {
    throw LoadErrors.<RuntimeException>undeclared(
        QueryExecutionErrors.unexpectedStateStoreVersion(version));
  }

  /**
   * A file the load needs is absent (a version never committed, or deleted): {@code
   * CANNOT_LOAD_STATE_STORE.CANNOT_READ_STREAMING_STATE_FILE} naming {@code fileToRead}.
   */
  static RuntimeException missingFile(String fileToRead, Throwable detail) {
    throw LoadErrors.<RuntimeException>undeclared(
        QueryExecutionErrors.failedToReadStreamingStateFileError(new Path(fileToRead), detail));
  }

  /** Any other failure to load: {@code CANNOT_LOAD_STATE_STORE.UNCATEGORIZED}. */
  static RuntimeException cannotLoad(Throwable detail) {
    throw LoadErrors.<RuntimeException>undeclared(QueryExecutionErrors.cannotLoadStore(detail));
  }

  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E undeclared(Throwable t) throws E {
    throw (E) t;
  }
}
