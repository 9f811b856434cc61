package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import io.streamstate.spark.shared.HedgeCounters;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import scala.Tuple3;

/**
 * A Spark query with its checkpoint on a remote store (HDFS, S3A), with our provider and {@link
 * RenameFreeCheckpointFileManager}: same output as Spark's HDFS-backed provider on a local
 * checkpoint, no rename, and the storage requests per batch against Spark's built-in setup. Also
 * the manager's contract on that store ({@link CheckpointFileManagerTests}). Subclasses give the
 * store, its request counter, and a Spark session that reaches it.
 *
 * <p>The Spark tests run first: a measured run should not overlap with background work of other
 * tests. After each run the test waits until the store sees no more requests: Spark's maintenance
 * unloads the providers of a stopped query within a few rounds (200 ms each here).
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class RemoteCheckpointTests extends CheckpointFileManagerTests {
  static final String CFM_KEY = "spark.sql.streaming.checkpointFileManagerClass";
  static final String OUR_CFM = RenameFreeCheckpointFileManager.class.getName();

  /** What {@code CheckpointFileManager.create} picks when nothing is set (FileContext works). */
  static final String SPARK_DEFAULT_CFM =
      "org.apache.spark.sql.execution.streaming.checkpointing.FileContextBasedCheckpointFileManager";

  static final int WARM_UP_BATCHES = 3;
  static final int MEASURED_BATCHES = 10;

  protected abstract SparkSession spark();

  /** A local directory for reference checkpoints. */
  protected abstract Path localWork();

  /** A fresh checkpoint location on the store under test. */
  protected abstract String checkpointUri(String name);

  protected abstract RequestCounts.Source requests();

  /** The request kind that a rename is on this store: "rename" (HDFS), "copy" (S3, COPY+DELETE). */
  protected abstract String renameKind();

  private static Map<String, Long> renameFree(RequestCounts.Source source, Map<String, Long> d) {
    Map<String, Long> out = new LinkedHashMap<>();
    d.forEach(
        (op, n) -> {
          String kind = source.kindOf(op);
          if (kind != null) {
            out.merge(kind, n, Long::sum);
          }
        });
    return out;
  }

  @Test
  @Order(1)
  void windowedAggregationWithCheckpointOnStoreMatchesReferenceAndNeverRenames() throws Exception {
    ClockedRun run = new ClockedRun(spark(), 1, AggregationIT::windowedQuery, OutputMode.Append());
    ClockedRun.Result reference =
        run.run(
            TestSessions.HDFS, localWork().resolve("e2e-reference"), AggregationIT.windowedSteps());
    awaitQuiet();

    Map<String, Long> before = requests().snapshot();
    io.streamstate.core.hedge.HedgeMetrics.Snapshot logHedgesBefore = HedgeCounters.sparkLogs();
    ClockedRun.Result ours =
        run.run(
            TestSessions.OURS,
            checkpointUri("e2e-ours"),
            AggregationIT.windowedSteps(),
            Map.of(CFM_KEY, OUR_CFM));
    awaitQuiet();
    Map<String, Long> byKind =
        renameFree(requests(), RequestCounts.delta(before, requests().snapshot()));

    System.out.printf(
        "E2E on %s (windowed aggregation, append, 2 restarts): ours %d rows, reference (HDFS"
            + " provider, local checkpoint) %d rows, identical: %s; requests of our run by kind:"
            + " %s%n",
        storeName(),
        ours.rows().size(),
        reference.rows().size(),
        ours.rows().equals(reference.rows()),
        byKind);
    // Our manager hedges Spark's log writes where a create takes the name (HDFS), not on S3.
    System.out.printf(
        "E2E on %s: Spark log writes through our manager's hedger: %s%n",
        storeName(), HedgeCounters.sparkLogs().since(logHedgesBefore));
    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(reference.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(reference.lastNumRowsTotal());
    assertThat(byKind).containsKey("create");
    assertThat(byKind.getOrDefault(renameKind(), 0L)).as("renames of our run").isZero();
  }

  @Test
  @Order(2)
  void requestsPerBatchOfOursAgainstSparksBuiltIn() throws Exception {
    Map<String, Double> ours = measure(TestSessions.OURS, OUR_CFM, "requests-ours");
    Map<String, Double> builtIn = measure(TestSessions.HDFS, SPARK_DEFAULT_CFM, "requests-builtin");
    Map<String, Map<String, Double>> columns = new LinkedHashMap<>();
    columns.put("ours", ours);
    columns.put("built-in", builtIn);
    System.out.print(
        RequestCounts.table(
            "Storage requests per batch on "
                + storeName()
                + " (windowed aggregation, "
                + TestSessions.SHUFFLE_PARTITIONS
                + " partitions, "
                + MEASURED_BATCHES
                + " batches after "
                + WARM_UP_BATCHES
                + " warm-up; ours = StreamStateProvider + RenameFreeCheckpointFileManager,"
                + " built-in = HDFSBackedStateStoreProvider + "
                + "FileContextBasedCheckpointFileManager)",
            columns));
    assertThat(ours.get(renameKind())).as("our renames per batch").isZero();
    assertThat(ours.get("rename")).as("our renames per batch").isZero();
    // The counter sees renames at all: Spark's built-in setup renames every file it writes.
    assertThat(builtIn.get(renameKind())).as("built-in renames per batch").isPositive();
  }

  /**
   * Waits until the store has seen no request for a second (the stopped query's providers are
   * unloaded), at most 30 s; goes on regardless, the measured windows are bracketed anyway.
   */
  protected void awaitQuiet() {
    AtomicReference<Map<String, Long>> last = new AtomicReference<>(requests().snapshot());
    try {
      await()
          .pollDelay(Duration.ofSeconds(1))
          .pollInterval(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(30))
          .until(() -> last.getAndSet(requests().snapshot()).equals(last.get()));
    } catch (ConditionTimeoutException e) {
      // Background requests go on (lease renewals, say): measure anyway.
    }
  }

  /** Requests per batch by kind, over the measured batches of one run. */
  private Map<String, Double> measure(String provider, String cfm, String name) throws Exception {
    return measure(provider, Map.of(CFM_KEY, cfm), name);
  }

  /** As {@link #measure(String, String, String)}, with these session settings for the run. */
  protected Map<String, Double> measure(String provider, Map<String, String> conf, String name)
      throws Exception {
    AtomicReference<Map<String, Long>> before = new AtomicReference<>();
    AtomicReference<Map<String, Long>> after = new AtomicReference<>();
    ClockedRun.Steps steps = new ClockedRun.Steps();
    int batch = 0;
    for (; batch < WARM_UP_BATCHES; batch++) {
      steps.data(0, batchEvents(batch)).tick();
    }
    steps.await("counters before", q -> before.compareAndSet(null, requests().snapshot()) || true);
    for (; batch < WARM_UP_BATCHES + MEASURED_BATCHES; batch++) {
      steps.data(0, batchEvents(batch)).tick();
    }
    steps.await("counters after", q -> after.compareAndSet(null, requests().snapshot()) || true);
    ClockedRun run = new ClockedRun(spark(), 1, AggregationIT::windowedQuery, OutputMode.Append());
    ClockedRun.Result result = run.run(provider, checkpointUri(name), steps, conf);
    awaitQuiet();
    assertThat(result.rows()).isNotEmpty();
    System.out.printf(
        "Requests on %s, %s, %d batches: %s%n",
        storeName(), name, MEASURED_BATCHES, RequestCounts.delta(before.get(), after.get()));
    return RequestCounts.perBatch(requests(), before.get(), after.get(), MEASURED_BATCHES);
  }

  /** Eight keys, two events each, five seconds further on per batch: windows close as it runs. */
  @SuppressWarnings("unchecked")
  private static Tuple3<String, Timestamp, Integer>[] batchEvents(int batch) {
    List<Tuple3<String, Timestamp, Integer>> events = new java.util.ArrayList<>();
    for (int k = 0; k < 8; k++) {
      events.add(ev("k" + k, 100 + batch * 5L, batch + k));
      events.add(ev("k" + k, 101 + batch * 5L, 1));
    }
    return events.toArray(new Tuple3[0]);
  }
}
