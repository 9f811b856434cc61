package io.streamstate.dstream.jdbc;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.regex.Pattern;

/**
 * The transaction discipline shared by {@link DirectStreamOffsets} and {@link ForeachBatchOutput}.
 */
final class Transactions {
  private static final Pattern TABLE_NAME =
      Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

  private Transactions() {}

  /** The body of a transaction: decides, writes, and says whether to commit. */
  interface Body {
    BatchOutcome run(Connection connection) throws SQLException;
  }

  /**
   * Re-reads, after a unique-key violation, whether another writer committed the same batch:
   * returns SKIPPED_REPLAY if so, null if not (the violation was then the results writer's own).
   */
  interface Reread {
    BatchOutcome run(Connection connection) throws SQLException;
  }

  /**
   * Thrown by a body whose locking reads saw only part of another writer's commit: rows absent when
   * read that the other writer inserted, and committed, by the time of the next read (a first row
   * has nothing to lock). Like a unique-key violation, the outcome is then decided by reread in a
   * fresh transaction, which sees the whole commit.
   */
  static final class ConcurrentWriterSeen extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ConcurrentWriterSeen(String message) {
      super(message, null, false, false);
    }
  }

  static String checkTableName(String name) {
    if (name == null || !TABLE_NAME.matcher(name).matches()) {
      throw new IllegalArgumentException(
          "Table name must be an SQL identifier, optionally schema-qualified ([A-Za-z_][A-Za-z0-9_]*): "
              + name);
    }
    return name;
  }

  static void execute(JdbcConnectionFactory factory, String sql, String what) {
    try (Connection c = factory.open()) {
      c.setAutoCommit(true);
      try (var statement = c.createStatement()) {
        statement.execute(sql);
      }
    } catch (SQLException e) {
      throw new ExactlyOnceOutputException("Cannot " + what + " (" + sql + ")", e);
    }
  }

  /**
   * Runs body in one READ COMMITTED transaction: commits when it returns COMMITTED, rolls back
   * otherwise or on any exception. A unique-key violation means another writer inserted the same
   * partition's (or sink's) first row concurrently and committed first; {@link
   * ConcurrentWriterSeen}, that the body saw part of such a commit. Either way the outcome is then
   * decided by reread in a fresh transaction, once the winner is visible.
   */
  static BatchOutcome run(JdbcConnectionFactory factory, String what, Body body, Reread reread) {
    try (Connection c = factory.open()) {
      c.setAutoCommit(false);
      // Locking reads (SELECT ... FOR UPDATE) see the latest committed row under READ COMMITTED;
      // under REPEATABLE READ PostgreSQL would instead fail the second writer with a serialization
      // error.
      c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
      BatchOutcome outcome = null;
      Exception violation = null;
      try {
        outcome = body.run(c);
        if (outcome != BatchOutcome.COMMITTED) {
          c.rollback();
          return outcome;
        }
      } catch (SQLException e) {
        rollbackQuietly(c, e);
        if (!isUniqueViolation(e)) {
          throw new ExactlyOnceOutputException(
              "Cannot commit " + what + ": " + e.getMessage() + " (rolled back)", e);
        }
        violation = e;
      } catch (ConcurrentWriterSeen e) {
        rollbackQuietly(c, e);
        violation = e;
      } catch (RuntimeException | Error e) {
        rollbackQuietly(c, e);
        throw e;
      }
      if (violation == null) {
        try {
          c.commit();
          return outcome;
        } catch (SQLException e) {
          // The commit may have reached the database before the error: unknown, not failed.
          throw new CommitStateUnknownException(
              "Commit of "
                  + what
                  + " failed, it may or may not be committed: "
                  + e.getMessage()
                  + ". Retry the batch: it is skipped if it was committed.",
              e);
        }
      }
      // Lost the race to insert a first row, or saw part of the winner's commit: the winner has
      // committed; decide again.
      try {
        BatchOutcome again = reread.run(c);
        c.rollback();
        if (again == null) {
          throw new ExactlyOnceOutputException(
              "Cannot commit " + what + ": " + violation.getMessage() + " (rolled back)",
              violation);
        }
        return again;
      } catch (SQLException e) {
        rollbackQuietly(c, e);
        throw new ExactlyOnceOutputException(
            "Cannot re-read " + what + " after a concurrent writer: " + e.getMessage(), e);
      } catch (RuntimeException | Error e) {
        rollbackQuietly(c, e);
        throw e;
      }
    } catch (SQLException e) {
      throw new ExactlyOnceOutputException(
          "Cannot open or close a connection for " + what + ": " + e.getMessage(), e);
    }
  }

  /**
   * SQLSTATE class 23 (integrity constraint violation); 23505 is unique violation in PostgreSQL.
   */
  private static boolean isUniqueViolation(SQLException e) {
    for (SQLException s = e; s != null; s = s.getNextException()) {
      String state = s.getSQLState();
      if (state != null && state.startsWith("23")) {
        return true;
      }
    }
    return false;
  }

  private static void rollbackQuietly(Connection c, Throwable failure) {
    try {
      c.rollback();
    } catch (SQLException e) {
      failure.addSuppressed(e);
    }
  }
}
