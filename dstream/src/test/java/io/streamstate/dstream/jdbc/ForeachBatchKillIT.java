package io.streamstate.dstream.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.testing.ChildJvm;
import io.streamstate.dstream.testing.EmbeddedPostgresFixture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code foreachBatch} under SIGKILL: a Structured Streaming query in a child JVM ({@link
 * ForeachBatchDriver}, rate source, a checkpoint) writes each batch's values through {@link
 * ForeachBatchOutput} and is killed at seeded random points, then restarted from its checkpoint.
 * Spark re-runs the batch in flight at the kill; when it had reached the database, it must be
 * skipped. After every kill: every value from 0 to the largest is in the table exactly once, and
 * the largest batch id written is the sink's last committed batch id.
 *
 * <p>System properties: {@code streamstate.foreachBatchKills} (default 5), {@code
 * streamstate.kafkaSeed} (default 20).
 */
class ForeachBatchKillIT {
  private static EmbeddedPostgresFixture postgres;

  @TempDir static Path tmp;

  @BeforeAll
  static void start() {
    postgres = EmbeddedPostgresFixture.start();
  }

  @AfterAll
  static void stop() {
    if (postgres != null) {
      postgres.close();
    }
  }

  @Test
  void everyValueOnceAcrossKillsOfTheQueryDriver() throws Exception {
    int kills = Integer.getInteger("streamstate.foreachBatchKills", 3);
    Random random = new Random(Long.getLong("streamstate.kafkaSeed", 20L));
    String url = postgres.createDatabase("foreach_batch_kill");
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(ForeachBatchDriver.CREATE_VALUES_TABLE);
    }
    ForeachBatchOutput sink =
        ExactlyOnceJdbc.forForeachBatch(() -> DriverManager.getConnection(url), "rate-values");
    String checkpoint = tmp.resolve("checkpoint").toString();
    int committed = 0;
    int skipped = 0;
    for (int kill = 0; kill <= kills; kill++) {
      boolean last = kill == kills;
      try (Child driver = Child.start(url, checkpoint, tmp)) {
        driver.awaitBatches(last ? 3 : random.nextInt(4));
        if (!last) {
          Thread.sleep(random.nextInt(800));
        }
        driver.kill();
        committed += driver.committed.get();
        skipped += driver.skipped.get();
      }
      assertEveryValueOnce(url, sink.lastCommittedBatchId(), "after kill " + kill);
    }
    System.out.printf(
        "ForeachBatchKillIT: kills=%d, batches committed=%d, replays skipped=%d, last batch=%d%n",
        kills, committed, skipped, sink.lastCommittedBatchId().orElse(-1));
    assertThat(committed).isPositive();
  }

  private static void assertEveryValueOnce(String url, OptionalLong lastBatch, String when)
      throws Exception {
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery(
                "SELECT count(*), count(DISTINCT v), coalesce(max(v), -1), coalesce(max(batch_id), -1)"
                    + " FROM rate_values")) {
      r.next();
      long rows = r.getLong(1);
      assertThat(r.getLong(2)).as("distinct values %s", when).isEqualTo(rows);
      assertThat(r.getLong(3)).as("max value %s (values 0..n-1)", when).isEqualTo(rows - 1);
      assertThat(r.getLong(4))
          .as("largest batch id written %s", when)
          .isEqualTo(lastBatch.orElse(-1));
    }
  }

  /** A {@link ForeachBatchDriver} in a child JVM; killed on close at the latest. */
  private static final class Child implements AutoCloseable {
    final AtomicInteger committed = new AtomicInteger();
    final AtomicInteger skipped = new AtomicInteger();
    private ChildJvm child;

    static Child start(String url, String checkpoint, Path tmp) throws IOException {
      Child driver = new Child();
      driver.child =
          ChildJvm.main(
                  ForeachBatchDriver.class,
                  List.of(
                      url,
                      checkpoint,
                      "rate-values",
                      Files.createTempDirectory(tmp, "spark-local").toString()))
              .jvmArgs("-XX:+UseSerialGC")
              .onLine(driver::count)
              .start();
      return driver;
    }

    private void count(String line) {
      if (line.startsWith("COMMITTED")) {
        committed.incrementAndGet();
      } else if (line.startsWith("SKIPPED_REPLAY")) {
        skipped.incrementAndGet();
      }
    }

    void awaitBatches(int n) {
      await("driver " + child.pid() + " to write " + n + " batches")
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                if (!child.isAlive()) {
                  throw new AssertionError(
                      "Driver exited with " + child.exitValue() + ":\n" + child.tail());
                }
                return committed.get() + skipped.get() >= n;
              });
    }

    void kill() throws InterruptedException {
      child.kill();
    }

    @Override
    public void close() {
      child.close();
    }
  }
}
