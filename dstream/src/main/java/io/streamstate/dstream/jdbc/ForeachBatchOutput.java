package io.streamstate.dstream.jdbc;

import java.io.Serializable;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Exactly-once output from Structured Streaming's {@code foreachBatch}: a batch's results and the
 * (sink, batch id) are written in one JDBC transaction, and a batch id at or below the last
 * committed one is skipped.
 *
 * <p>Spark re-runs a batch with the same id and the same input after a restart when the batch was
 * planned but its commit was not recorded in the checkpoint; its output then must not be written
 * twice. The batches table has one row per sink with the last committed batch id; the row is locked
 * ({@code SELECT ... FOR UPDATE}) while the batch is decided and written, so of two drivers writing
 * the same batch only one commits; the first batch of a sink is decided by the primary key.
 *
 * <p>The sink name must stay the same across restarts of the query and be unique among the queries
 * writing to the table. Batch ids restart at 0 with a new checkpoint location: give such a query a
 * new sink name (or delete its row), else its batches are skipped as replays. The query's id
 * ({@code query.id()}) is a name that changes exactly with the checkpoint.
 *
 * <p>Create it with {@link ExactlyOnceJdbc#forForeachBatch}.
 */
public final class ForeachBatchOutput implements Serializable {
  private static final long serialVersionUID = 1L;

  private final JdbcConnectionFactory connections;
  private final String sink;
  private final String table;

  ForeachBatchOutput(JdbcConnectionFactory connections, String sink, String table) {
    this.connections = Objects.requireNonNull(connections, "connections");
    this.sink = Objects.requireNonNull(sink, "sink");
    this.table = Transactions.checkTableName(table);
  }

  void createTableIfAbsent() {
    Transactions.execute(connections, createTableSql(table), "create the batches table " + table);
  }

  /** The DDL of the batches table. */
  static String createTableSql(String table) {
    return "CREATE TABLE IF NOT EXISTS "
        + table
        + " (sink VARCHAR(255) NOT NULL PRIMARY KEY, batch_id BIGINT NOT NULL)";
  }

  /** The sink name this instance writes batches for. */
  public String sink() {
    return sink;
  }

  /** The batches table's name. */
  public String table() {
    return table;
  }

  /** The last batch id committed for this sink, or empty when none was. */
  public OptionalLong lastCommittedBatchId() {
    try (Connection c = connections.open();
        PreparedStatement s =
            c.prepareStatement("SELECT batch_id FROM " + table + " WHERE sink = ?")) {
      s.setString(1, sink);
      try (ResultSet rows = s.executeQuery()) {
        return rows.next() ? OptionalLong.of(rows.getLong(1)) : OptionalLong.empty();
      }
    } catch (SQLException e) {
      throw new ExactlyOnceOutputException(
          "Cannot read the last batch of sink " + sink + " from " + table + ": " + e.getMessage(),
          e);
    }
  }

  /**
   * Writes the results of batch {@code batchId} and records the batch, in one transaction; skips a
   * batch id at or below the last committed one without calling the results writer.
   *
   * @return {@link BatchOutcome#COMMITTED} or {@link BatchOutcome#SKIPPED_REPLAY}
   * @throws ExactlyOnceOutputException when the transaction failed (rolled back; retrying is safe)
   */
  public BatchOutcome writeBatch(long batchId, ResultsWriter results) {
    Objects.requireNonNull(results, "results");
    String what = "batch " + batchId + " of sink " + sink;
    return Transactions.run(
        connections,
        what,
        c -> write(c, batchId, results),
        c -> {
          Long last = lockLast(c);
          return last != null && batchId <= last ? BatchOutcome.SKIPPED_REPLAY : null;
        });
  }

  private BatchOutcome write(Connection c, long batchId, ResultsWriter results)
      throws SQLException {
    Long last = lockLast(c);
    if (last != null && batchId <= last) {
      return BatchOutcome.SKIPPED_REPLAY;
    }
    results.write(c);
    if (last == null) {
      try (PreparedStatement ins =
          c.prepareStatement("INSERT INTO " + table + " (sink, batch_id) VALUES (?, ?)")) {
        ins.setString(1, sink);
        ins.setLong(2, batchId);
        ins.executeUpdate();
      }
    } else {
      try (PreparedStatement upd =
          c.prepareStatement(
              "UPDATE " + table + " SET batch_id = ? WHERE sink = ? AND batch_id = ?")) {
        upd.setLong(1, batchId);
        upd.setString(2, sink);
        upd.setLong(3, last);
        if (upd.executeUpdate() != 1) {
          throw new ExactlyOnceOutputException(
              "Cannot commit batch "
                  + batchId
                  + " of sink "
                  + sink
                  + ": its row in "
                  + table
                  + " changed under the row lock (does the database honour SELECT ... FOR UPDATE?)");
        }
      }
    }
    return BatchOutcome.COMMITTED;
  }

  private Long lockLast(Connection c) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement("SELECT batch_id FROM " + table + " WHERE sink = ? FOR UPDATE")) {
      s.setString(1, sink);
      try (ResultSet rows = s.executeQuery()) {
        return rows.next() ? rows.getLong(1) : null;
      }
    }
  }
}
