package io.streamstate.dstream.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

/**
 * Writes one batch's results through the given connection, inside the transaction that also records
 * the batch as done. It must not commit, roll back, close the connection or change its auto-commit
 * mode: {@link DirectStreamOffsets} and {@link ForeachBatchOutput} own the transaction. An
 * exception (checked or not) rolls back the results and the offsets together.
 */
@FunctionalInterface
public interface ResultsWriter {

  /** Writes the results; called at most once per attempt, never for a batch already committed. */
  void write(Connection connection) throws SQLException;
}
