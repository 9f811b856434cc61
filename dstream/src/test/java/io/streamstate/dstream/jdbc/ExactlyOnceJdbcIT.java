package io.streamstate.dstream.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.dstream.testing.EmbeddedPostgresFixture;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.streaming.kafka010.OffsetRange;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

/** The helper's semantics against a real PostgreSQL: atomicity, replays, mismatches, races. */
class ExactlyOnceJdbcIT {
  private static EmbeddedPostgresFixture postgres;
  private static final AtomicInteger DATABASES = new AtomicInteger();

  private String url;
  private JdbcConnectionFactory connections;

  @BeforeAll
  static void startPostgres() {
    postgres = EmbeddedPostgresFixture.start();
  }

  @AfterAll
  static void stopPostgres() {
    if (postgres != null) {
      postgres.close();
    }
  }

  @BeforeEach
  void freshDatabase(TestInfo test) throws SQLException {
    url = postgres.createDatabase("eo_" + DATABASES.incrementAndGet());
    String u = url;
    connections = () -> DriverManager.getConnection(u);
    sql("CREATE TABLE results (k VARCHAR(64) PRIMARY KEY, total BIGINT NOT NULL)");
  }

  @Test
  void commitsResultsAndOffsetsTogether() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    assertThat(offsets.storedOffsets("t")).isEmpty();

    BatchOutcome outcome =
        offsets.writeBatch(
            new OffsetRange[] {OffsetRange.create("t", 0, 0, 10), OffsetRange.create("t", 1, 5, 7)},
            c -> add(c, "a", 3));

    assertThat(outcome).isEqualTo(BatchOutcome.COMMITTED);
    assertThat(total("a")).isEqualTo(3);
    assertThat(offsets.storedOffsets(List.of("t")))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(new TopicPartition("t", 0), 10L, new TopicPartition("t", 1), 7L));
  }

  @Test
  void failingResultsWriterLeavesNeitherResultsNorOffsets() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    offsets.writeBatch(new OffsetRange[] {OffsetRange.create("t", 0, 0, 10)}, c -> add(c, "a", 1));

    assertThatThrownBy(
            () ->
                offsets.writeBatch(
                    new OffsetRange[] {OffsetRange.create("t", 0, 10, 20)},
                    c -> {
                      add(c, "a", 100);
                      throw new IllegalStateException("results writer failed");
                    }))
        .isInstanceOf(IllegalStateException.class)
        .hasMessage("results writer failed");
    assertThatThrownBy(
            () ->
                offsets.writeBatch(
                    new OffsetRange[] {OffsetRange.create("t", 0, 10, 20)},
                    c -> {
                      add(c, "a", 100);
                      c.createStatement().execute("SELECT * FROM no_such_table");
                    }))
        .isInstanceOf(ExactlyOnceOutputException.class)
        .hasMessageContaining("Cannot commit the batch [t-0 10..20] of app app")
        .hasMessageContaining("no_such_table");

    assertThat(total("a")).isEqualTo(1);
    assertThat(offsets.storedOffsets("t")).containsEntry(new TopicPartition("t", 0), 10L);
    // The same batch then commits normally.
    assertThat(
            offsets.writeBatch(
                new OffsetRange[] {OffsetRange.create("t", 0, 10, 20)}, c -> add(c, "a", 100)))
        .isEqualTo(BatchOutcome.COMMITTED);
    assertThat(total("a")).isEqualTo(101);
  }

  @Test
  void skipsReplayedBatchWithoutCallingTheWriter() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    OffsetRange[] batch = {OffsetRange.create("t", 0, 0, 10), OffsetRange.create("t", 1, 0, 0)};
    offsets.writeBatch(batch, c -> add(c, "a", 5));
    AtomicInteger calls = new AtomicInteger();

    BatchOutcome replay =
        offsets.writeBatch(
            batch,
            c -> {
              calls.incrementAndGet();
              add(c, "a", 5);
            });

    assertThat(replay).isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(calls).hasValue(0);
    assertThat(total("a")).isEqualTo(5);
  }

  @Test
  void refusesBatchNotStartingAtStoredOffsetNamingBoth() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    offsets.writeBatch(new OffsetRange[] {OffsetRange.create("t", 0, 0, 10)}, c -> add(c, "a", 1));

    assertThatThrownBy(
            () ->
                offsets.writeBatch(
                    new OffsetRange[] {OffsetRange.create("t", 0, 15, 20)}, c -> add(c, "a", 1)))
        .isInstanceOf(OffsetMismatchException.class)
        .hasMessageContaining("t-0: stored until_offset 10, batch fromOffset 15 (untilOffset 20)");
    assertThatThrownBy(
            () -> offsets.writePartition(OffsetRange.create("t", 0, 3, 8), c -> add(c, "a", 1)))
        .isInstanceOf(OffsetMismatchException.class)
        .hasMessageContaining("t-0: stored until_offset 10, batch fromOffset 3 (untilOffset 8)")
        .hasMessageContaining("Was the stream started from other offsets than storedOffsets(...)");
    assertThat(total("a")).isEqualTo(1);
  }

  @Test
  void refusesPartlyCommittedDriverSideBatch() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    offsets.writePartition(OffsetRange.create("t", 0, 0, 10), c -> add(c, "a", 1));

    assertThatThrownBy(
            () ->
                offsets.writeBatch(
                    new OffsetRange[] {
                      OffsetRange.create("t", 0, 0, 10), OffsetRange.create("t", 1, 0, 10)
                    },
                    c -> add(c, "a", 1)))
        .isInstanceOf(OffsetMismatchException.class)
        .hasMessageContaining("committed in streamstate_kafka_offsets for [t-0] but not for [t-1]");
  }

  @Test
  void perPartitionWritesAreIndependent() {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app", "my_offsets");
    assertThat(offsets.writePartition(OffsetRange.create("t", 0, 0, 10), c -> add(c, "a", 1)))
        .isEqualTo(BatchOutcome.COMMITTED);
    assertThat(offsets.writePartition(OffsetRange.create("t", 1, 0, 4), c -> add(c, "b", 1)))
        .isEqualTo(BatchOutcome.COMMITTED);
    assertThat(offsets.writePartition(OffsetRange.create("t", 0, 0, 10), c -> add(c, "a", 1)))
        .isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(offsets.writePartition(OffsetRange.create("t", 1, 4, 9), c -> add(c, "b", 1)))
        .isEqualTo(BatchOutcome.COMMITTED);
    assertThat(total("a")).isEqualTo(1);
    assertThat(total("b")).isEqualTo(2);
    assertThat(
            ExactlyOnceJdbc.forDirectStream(connections, "other", "my_offsets").storedOffsets("t"))
        .isEmpty();
  }

  @Test
  void ofConcurrentWritersOfOneBatchExactlyOneCommits() throws Exception {
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, "app");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      // Round 0 races on the first insert (no row to lock); later rounds on the row lock.
      for (int round = 0; round < 40; round++) {
        long from = round * 10L;
        OffsetRange[] batch = {
          OffsetRange.create("t", 0, from, from + 10), OffsetRange.create("t", 1, from, from + 10)
        };
        CyclicBarrier start = new CyclicBarrier(2);
        List<Future<BatchOutcome>> writers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
          writers.add(
              pool.submit(
                  () -> {
                    start.await();
                    return offsets.writeBatch(batch, c -> add(c, "a", 1));
                  }));
        }
        List<BatchOutcome> outcomes = new ArrayList<>();
        for (Future<BatchOutcome> f : writers) {
          outcomes.add(f.get());
        }
        assertThat(outcomes)
            .as("round %d", round)
            .containsExactlyInAnyOrder(BatchOutcome.COMMITTED, BatchOutcome.SKIPPED_REPLAY);
        assertThat(total("a")).as("round %d", round).isEqualTo(round + 1);
      }
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aFirstCommitSeenBetweenTwoReadsIsAReplayNotAMismatch() {
    DirectStreamOffsets other = ExactlyOnceJdbc.forDirectStream(connections, "app");
    OffsetRange[] batch = {OffsetRange.create("t", 0, 0, 10), OffsetRange.create("t", 1, 0, 10)};
    String u = url;
    AtomicInteger lockingReads = new AtomicInteger();
    // This writer's first locking read finds no row for t-0 (nothing to lock); right after it, the
    // other writer commits the whole batch, so the second read finds t-1 committed: the
    // interleaving two concurrent first commits can have.
    JdbcConnectionFactory otherCommitsAfterFirstRead =
        () -> {
          Connection real = DriverManager.getConnection(u);
          return (Connection)
              Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (proxy, method, args) -> {
                    Object result = invoke(method, real, args);
                    if (method.getName().equals("prepareStatement")
                        && ((String) args[0]).endsWith("FOR UPDATE")) {
                      PreparedStatement statement = (PreparedStatement) result;
                      return Proxy.newProxyInstance(
                          PreparedStatement.class.getClassLoader(),
                          new Class<?>[] {PreparedStatement.class},
                          (p, m, a) -> {
                            Object r = invoke(m, statement, a);
                            if (m.getName().equals("executeQuery")
                                && lockingReads.incrementAndGet() == 1) {
                              assertThat(other.writeBatch(batch, c -> add(c, "a", 1)))
                                  .isEqualTo(BatchOutcome.COMMITTED);
                            }
                            return r;
                          });
                    }
                    return result;
                  });
        };
    DirectStreamOffsets interleaved =
        ExactlyOnceJdbc.forDirectStream(otherCommitsAfterFirstRead, "app");

    assertThat(interleaved.writeBatch(batch, c -> add(c, "a", 1)))
        .isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(lockingReads.get())
        .as("locking reads: two, then two again after the mix")
        .isEqualTo(4);
    assertThat(total("a")).isEqualTo(1);
    assertThat(other.storedOffsets("t"))
        .containsExactlyInAnyOrderEntriesOf(
            Map.of(new TopicPartition("t", 0), 10L, new TopicPartition("t", 1), 10L));
  }

  private static Object invoke(java.lang.reflect.Method method, Object target, Object[] args)
      throws Throwable {
    try {
      return method.invoke(target, args);
    } catch (InvocationTargetException e) {
      throw e.getCause();
    }
  }

  @Test
  void foreachBatchSkipsReplayedBatchIds() {
    ForeachBatchOutput sink = ExactlyOnceJdbc.forForeachBatch(connections, "sums");
    assertThat(sink.lastCommittedBatchId()).isEqualTo(OptionalLong.empty());
    assertThat(sink.writeBatch(0, c -> add(c, "a", 1))).isEqualTo(BatchOutcome.COMMITTED);
    assertThat(sink.writeBatch(1, c -> add(c, "a", 1))).isEqualTo(BatchOutcome.COMMITTED);
    assertThat(sink.writeBatch(1, c -> add(c, "a", 1))).isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(sink.writeBatch(0, c -> add(c, "a", 1))).isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThatThrownBy(
            () ->
                sink.writeBatch(
                    2,
                    c -> {
                      add(c, "a", 1);
                      throw new SQLException("boom", "XX000");
                    }))
        .isInstanceOf(ExactlyOnceOutputException.class)
        .hasMessageContaining("Cannot commit batch 2 of sink sums: boom");
    assertThat(sink.lastCommittedBatchId()).isEqualTo(OptionalLong.of(1));
    assertThat(total("a")).isEqualTo(2);
    assertThat(ExactlyOnceJdbc.forForeachBatch(connections, "other").writeBatch(0, c -> {}))
        .isEqualTo(BatchOutcome.COMMITTED);
  }

  @Test
  void ofConcurrentForeachBatchWritersExactlyOneCommits() throws Exception {
    ForeachBatchOutput sink = ExactlyOnceJdbc.forForeachBatch(connections, "sums");
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      for (int round = 0; round < 40; round++) {
        long batchId = round;
        CyclicBarrier start = new CyclicBarrier(2);
        List<Future<BatchOutcome>> writers = new ArrayList<>();
        for (int w = 0; w < 2; w++) {
          writers.add(
              pool.submit(
                  () -> {
                    start.await();
                    return sink.writeBatch(batchId, c -> add(c, "a", 1));
                  }));
        }
        List<BatchOutcome> outcomes = new ArrayList<>();
        for (Future<BatchOutcome> f : writers) {
          outcomes.add(f.get());
        }
        assertThat(outcomes)
            .as("round %d", round)
            .containsExactlyInAnyOrder(BatchOutcome.COMMITTED, BatchOutcome.SKIPPED_REPLAY);
      }
      assertThat(total("a")).isEqualTo(40);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void commitThatFailsAfterReachingTheDatabaseIsUnknownAndRetrySkips() {
    String u = url;
    // A connection whose commit() commits, then reports an error: "committed, but the caller saw
    // an error", as when the connection breaks after the database committed.
    JdbcConnectionFactory committingThenFailing =
        () -> {
          Connection real = DriverManager.getConnection(u);
          return (Connection)
              Proxy.newProxyInstance(
                  Connection.class.getClassLoader(),
                  new Class<?>[] {Connection.class},
                  (proxy, method, args) -> {
                    Object result = invoke(method, real, args);
                    if (method.getName().equals("commit")) {
                      throw new SQLException("connection reset after commit", "08006");
                    }
                    return result;
                  });
        };
    DirectStreamOffsets failing =
        ExactlyOnceJdbc.forDirectStream(committingThenFailing, "app", "unknown_offsets");
    OffsetRange[] batch = {OffsetRange.create("t", 0, 0, 10)};

    assertThatThrownBy(() -> failing.writeBatch(batch, c -> add(c, "a", 7)))
        .isInstanceOf(CommitStateUnknownException.class)
        .hasMessageContaining(
            "Commit of the batch [t-0 0..10] of app app failed, it may or may not be committed:"
                + " connection reset after commit. Retry the batch");

    DirectStreamOffsets retry =
        ExactlyOnceJdbc.forDirectStream(connections, "app", "unknown_offsets");
    assertThat(retry.writeBatch(batch, c -> add(c, "a", 7))).isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(total("a")).isEqualTo(7);

    ForeachBatchOutput failingSink =
        ExactlyOnceJdbc.forForeachBatch(committingThenFailing, "sums", "unknown_batches");
    assertThatThrownBy(() -> failingSink.writeBatch(0, c -> add(c, "b", 1)))
        .isInstanceOf(CommitStateUnknownException.class)
        .hasMessageContaining("Commit of batch 0 of sink sums failed");
    assertThat(
            ExactlyOnceJdbc.forForeachBatch(connections, "sums", "unknown_batches")
                .writeBatch(0, c -> add(c, "b", 1)))
        .isEqualTo(BatchOutcome.SKIPPED_REPLAY);
    assertThat(total("b")).isEqualTo(1);
  }

  @Test
  void rejectsTableNameThatIsNotAnIdentifier() {
    assertThatThrownBy(() -> ExactlyOnceJdbc.forDirectStream(connections, "app", "x; DROP TABLE y"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Table name must be an SQL identifier");
  }

  private static void add(Connection c, String key, long amount) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "INSERT INTO results (k, total) VALUES (?, ?)"
                + " ON CONFLICT (k) DO UPDATE SET total = results.total + EXCLUDED.total")) {
      s.setString(1, key);
      s.setLong(2, amount);
      s.executeUpdate();
    }
  }

  private long total(String key) {
    try (Connection c = DriverManager.getConnection(url);
        PreparedStatement s = c.prepareStatement("SELECT total FROM results WHERE k = ?")) {
      s.setString(1, key);
      try (ResultSet rows = s.executeQuery()) {
        return rows.next() ? rows.getLong(1) : 0;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private void sql(String statement) throws SQLException {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(statement);
    }
  }
}
