package io.streamstate.dstream.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.testing.EmbeddedPostgresFixture;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Structured Streaming's own replay, through {@code foreachBatch}: batch 2 commits to PostgreSQL,
 * then its function fails before Spark records the batch in the checkpoint's commit log (a driver
 * dying between the two commits). The restarted query re-runs batch 2 with the same id and input;
 * {@link ForeachBatchOutput} must skip it, so every value of the rate source is in the table once.
 *
 * <p>The source is Spark's rate source: the Kafka source of Structured Streaming (spark-sql-kafka)
 * is not a dependency of this module. The failure is an exception thrown in the driver, not a
 * killed JVM.
 */
class ForeachBatchReplayIT {
  private static final AtomicBoolean FAIL_AFTER_COMMIT = new AtomicBoolean(true);
  private static final List<String> OUTCOMES = new CopyOnWriteArrayList<>();

  private static EmbeddedPostgresFixture postgres;
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    postgres = EmbeddedPostgresFixture.start();
    spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("ForeachBatchReplayIT")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
  }

  @AfterAll
  static void stop() {
    try {
      if (spark != null) {
        spark.stop();
      }
    } finally {
      if (postgres != null) {
        postgres.close();
      }
    }
  }

  @Test
  void replayedBatchIdIsSkippedAfterFailureBetweenDatabaseAndCheckpointCommits(@TempDir Path dir)
      throws Exception {
    String url = postgres.createDatabase("foreach_batch");
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      // No primary key: a batch written twice would show as duplicates, not as an error.
      s.execute("CREATE TABLE rate_values (v BIGINT NOT NULL)");
    }
    ForeachBatchOutput output =
        ExactlyOnceJdbc.forForeachBatch(() -> DriverManager.getConnection(url), "rate-values");
    VoidFunction2<Dataset<Row>, Long> writeValues =
        (batch, batchId) -> {
          List<Long> values = batch.select("value").as(Encoders.LONG()).collectAsList();
          BatchOutcome outcome =
              output.writeBatch(
                  batchId,
                  c -> {
                    try (PreparedStatement insert =
                        c.prepareStatement("INSERT INTO rate_values (v) VALUES (?)")) {
                      for (long v : values) {
                        insert.setLong(1, v);
                        insert.addBatch();
                      }
                      insert.executeBatch();
                    }
                  });
          OUTCOMES.add(batchId + ":" + outcome);
          if (batchId == 2 && FAIL_AFTER_COMMIT.compareAndSet(true, false)) {
            throw new IllegalStateException(
                "simulated failure after the database commit of batch 2");
          }
        };
    String checkpoint = dir.resolve("checkpoint").toString();

    StreamingQuery first = start(writeValues, checkpoint);
    assertThatThrownBy(first::awaitTermination)
        .hasStackTraceContaining("simulated failure after the database commit of batch 2");
    assertThat(output.lastCommittedBatchId()).hasValue(2);

    StreamingQuery second = start(writeValues, checkpoint);
    try {
      await("batch 5 to commit")
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(100))
          .until(() -> output.lastCommittedBatchId().orElse(-1) >= 5);
    } finally {
      second.stop();
    }

    assertThat(OUTCOMES).contains("2:COMMITTED", "2:SKIPPED_REPLAY");
    assertThat(OUTCOMES.stream().filter(o -> o.endsWith(":COMMITTED")).distinct().count())
        .as("each batch id committed once: %s", OUTCOMES)
        .isEqualTo(OUTCOMES.stream().filter(o -> o.endsWith(":COMMITTED")).count());
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement();
        ResultSet r =
            s.executeQuery("SELECT count(*), count(DISTINCT v), min(v), max(v) FROM rate_values")) {
      r.next();
      long rows = r.getLong(1);
      assertThat(rows).isPositive();
      assertThat(r.getLong(2)).as("distinct values").isEqualTo(rows);
      assertThat(r.getLong(3)).as("min").isZero();
      assertThat(r.getLong(4)).as("max: the values are 0..n-1, none missing").isEqualTo(rows - 1);
    }
    System.out.println("ForeachBatchReplayIT: outcomes " + OUTCOMES);
  }

  private static StreamingQuery start(VoidFunction2<Dataset<Row>, Long> fn, String checkpoint)
      throws Exception {
    return spark
        .readStream()
        .format("rate")
        .option("rowsPerSecond", "50")
        .load()
        .writeStream()
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.ProcessingTime(300))
        .foreachBatch(fn)
        .start();
  }
}
