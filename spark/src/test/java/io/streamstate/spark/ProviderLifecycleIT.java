package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple3;

/**
 * What surrounds the state itself: foreachBatch sinks (commit validation), custom metrics in query
 * progress, recovery from durable files alone, snapshots and retention on disk, and the clear
 * errors for what is not supported.
 */
class ProviderLifecycleIT {
  static final Path work = TestSessions.newWorkDir(ProviderLifecycleIT.class);
  private static SparkSession spark;

  /** Rows a foreachBatch sink received (the function runs on the driver). */
  private static final ConcurrentLinkedQueue<String> FOREACH_BATCH_ROWS =
      new ConcurrentLinkedQueue<>();

  @BeforeAll
  static void startSpark() {
    spark =
        TestSessions.start(
            "ProviderLifecycleIT", work, Map.of("spark.sql.streaming.minBatchesToRetain", "3"));
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
  }

  private static Dataset<Row> windowedCounts(Dataset<Row> events) {
    return events
        .withWatermark("ts", "10 seconds")
        .groupBy(window(col("ts"), "10 seconds"), col("key"))
        .agg(count(lit(1)).as("n"), sum("value").as("total"));
  }

  private static long metric(StateOperatorProgress op, String name) {
    Long value = op.customMetrics().get(name);
    assertThat(value).as("custom metric %s in %s", name, op.customMetrics()).isNotNull();
    return value;
  }

  @Test
  void foreachBatchSinkPassesCommitValidationAndReportsCustomMetrics() throws Exception {
    spark.conf().set(TestSessions.PROVIDER_CLASS, TestSessions.OURS);
    MemoryStream<Tuple3<String, Timestamp, Integer>> input =
        SparkLineTestApi.memoryStream(ClockedRun.eventEncoder(), spark);
    FOREACH_BATCH_ROWS.clear();
    StreamingQuery query =
        windowedCounts(input.toDS().toDF("key", "ts", "value"))
            .writeStream()
            .outputMode(OutputMode.Update())
            .option("checkpointLocation", work.resolve("foreach-batch").toString())
            .foreachBatch(
                (VoidFunction2<Dataset<Row>, Long>)
                    (batch, id) ->
                        batch
                            .collectAsList()
                            .forEach(
                                r ->
                                    FOREACH_BATCH_ROWS.add(
                                        r.getString(1) + "," + r.getLong(2) + "," + r.getLong(3))))
            .start();
    try {
      input.addData(ScalaInterop.seq(List.of(ev("a", 100, 1), ev("b", 101, 2))));
      query.processAllAvailable();
      input.addData(ScalaInterop.seq(List.of(ev("a", 102, 3), ev("c", 104, 4))));
      query.processAllAvailable();
      // Batch 0 loads the (empty) state; a no-data batch may follow each data batch (the
      // watermark moved); the second data batch updates a and c.
      StateOperatorProgress first = dataBatches(query).get(0);
      StateOperatorProgress second = dataBatches(query).get(1);

      assertThat(query.exception().isDefined()).isFalse(); // commit validation passed
      assertThat(FOREACH_BATCH_ROWS).containsExactlyInAnyOrder("a,1,1", "b,1,2", "a,2,4", "c,1,4");

      int partitions = TestSessions.SHUFFLE_PARTITIONS;
      assertThat(metric(first, "streamstateDurableLoads")).isEqualTo(partitions);
      assertThat(metric(first, "streamstateWarmLoads")).isZero();
      assertThat(metric(second, "streamstateWarmLoads")).isEqualTo(partitions);
      assertThat(metric(second, "streamstateDurableLoads")).isZero();
      assertThat(metric(second, "streamstateCommitLatencyMs")).isNotNegative();
      // At least the commit of a partition that changed; a partition without changes may write
      // nothing, and group commit shares one journal among partitions, so not one per partition
      // (">= partitions" failed once on a clean clone: 2 files for 3 partitions).
      assertThat(metric(second, "streamstateFilesWritten")).isPositive();
      assertThat(metric(second, "streamstateBytesWritten")).isPositive();
      assertThat(metric(second, "streamstateCommitBytes")).isPositive();
      // a and c, plus the row count of the partition that gained c
      assertThat(metric(second, "streamstateCommitChanges")).isEqualTo(3);
      assertThat(metric(second, "streamstateSnapshotLagVersions")).isNotNegative();
      assertThat(second.numRowsTotal()).isEqualTo(3); // window [100, 110) of a, b, c
    } finally {
      query.stop();
    }
  }

  private static ClockedRun.Steps recoverySteps(Runnable betweenRuns) {
    return new ClockedRun.Steps()
        .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("c", 102, 3))
        .tick()
        .data(0, ev("a", 105, 4), ev("d", 111, 5))
        .tick()
        .data(0, ev("b", 112, 6))
        .tick()
        .restart(betweenRuns)
        .data(0, ev("a", 109, 7), ev("c", 130, 8))
        .tick()
        .tick()
        .data(0, ev("e", 200, 9))
        .ticks(2);
  }

  @Test
  void restartWithLocalStateDeletedRecoversFromDurableFilesAlone() throws Exception {
    Path localRoot = work.resolve("streamstate-local");
    ClockedRun run = new ClockedRun(spark, 1, in -> windowedCounts(in.get(0)), OutputMode.Append());
    ClockedRun.Result ours =
        run.run(
            TestSessions.OURS,
            work.resolve("lost-local-ours"),
            recoverySteps(
                () -> {
                  // As on a new machine: the stopped run's stores closed first (Spark keeps them
                  // loaded, and their background flushes and snapshots would write into what is
                  // being deleted), then their local state gone.
                  TestSessions.stopStateStores();
                  deleteRecursively(localRoot);
                }));
    ClockedRun.Result hdfs =
        run.run(TestSessions.HDFS, work.resolve("lost-local-hdfs"), recoverySteps(() -> {}));

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    StateOperatorProgress firstAfterRestart = firstStateProgress(ours.lastRunProgress());
    assertThat(metric(firstAfterRestart, "streamstateDurableLoads"))
        .isEqualTo(TestSessions.SHUFFLE_PARTITIONS);
    assertThat(metric(firstAfterRestart, "streamstateWarmLoads")).isZero();
  }

  @Test
  void snapshotsAndRetentionBoundTheDurableFilesAndRecoveryUsesThem() throws Exception {
    Path checkpoint = work.resolve("retention-ours");
    Path store = checkpoint.resolve("state/0/0");
    ClockedRun run = new ClockedRun(spark, 1, in -> windowedCounts(in.get(0)), OutputMode.Append());
    ClockedRun.Steps steps = new ClockedRun.Steps();
    for (int i = 0; i < 10; i++) {
      steps.data(0, ev("k" + (i % 4), 100 + 3 * i, i)).tick();
    }
    // minDeltasForSnapshot=2 and minBatchesToRetain=3: maintenance (every 200 ms) snapshots the
    // store and deletes the changelogs no retained version needs.
    steps.await(
        "a snapshot and retention in " + store + ", reported to the coordinator",
        query -> hasSnapshotAndRetention(store, 10) && noLaggingStores(query));
    steps.restart().data(0, ev("k9", 200, 1)).ticks(2);
    ClockedRun.Result ours = run.run(TestSessions.OURS, checkpoint, steps);

    ClockedRun.Steps hdfsSteps = new ClockedRun.Steps();
    for (int i = 0; i < 10; i++) {
      hdfsSteps.data(0, ev("k" + (i % 4), 100 + 3 * i, i)).tick();
    }
    hdfsSteps.restart().data(0, ev("k9", 200, 1)).ticks(2);
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("retention-hdfs"), hdfsSteps);

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    StateOperatorProgress firstAfterRestart = firstStateProgress(ours.lastRunProgress());
    assertThat(metric(firstAfterRestart, "streamstateDurableLoads"))
        .isEqualTo(TestSessions.SHUFFLE_PARTITIONS);
    // Restored from snapshots: fewer changelogs replayed than the 10+ versions of each partition.
    assertThat(metric(firstAfterRestart, "streamstateChangelogsReplayed"))
        .isLessThan(10L * TestSessions.SHUFFLE_PARTITIONS);
  }

  /**
   * Spark's coordinator does not count the stores of the query as lagging on snapshots: the
   * provider reported its snapshots (else 4.2 forces a snapshot on every commit of a lagging
   * store).
   */
  private static boolean noLaggingStores(StreamingQuery query) {
    long latestVersion = query.lastProgress().batchId() + 1;
    return SparkLineTestApi.noLaggingStores(query.runId(), latestVersion);
  }

  /** At least one snapshot, and fewer changelogs than versions committed. */
  private static boolean hasSnapshotAndRetention(Path store, int versions) throws IOException {
    return fileCount(store.resolve("snapshot")) > 0
        && fileCount(store.resolve("changelog")) < versions;
  }

  private static long fileCount(Path dir) throws IOException {
    if (!Files.isDirectory(dir)) {
      return 0;
    }
    try (Stream<Path> files = Files.list(dir)) {
      return files.count();
    }
  }

  /** State progress of the batches that had input, in order. */
  private static List<StateOperatorProgress> dataBatches(StreamingQuery query) {
    List<StateOperatorProgress> out = new ArrayList<>();
    for (StreamingQueryProgress p : query.recentProgress()) {
      if (p.numInputRows() > 0 && p.stateOperators().length > 0) {
        out.add(p.stateOperators()[0]);
      }
    }
    assertThat(out).as("progress of batches with input").hasSizeGreaterThanOrEqualTo(2);
    return out;
  }

  private static StateOperatorProgress firstStateProgress(List<StreamingQueryProgress> progress) {
    List<StateOperatorProgress> withState = new ArrayList<>();
    for (StreamingQueryProgress p : progress) {
      if (p.stateOperators().length > 0
          && p.stateOperators()[0].customMetrics().containsKey("streamstateDurableLoads")) {
        withState.add(p.stateOperators()[0]);
      }
    }
    assertThat(withState).as("progress with state operators").isNotEmpty();
    return withState.get(0);
  }

  private static void deleteRecursively(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
