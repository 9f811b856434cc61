package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StorageClock;
import io.streamstate.spark.StreamStateConf;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Retention, the segment sweep and Spark's log purge under faults: the reliability query over
 * {@value #BATCHES} batches with {@code minBatchesToRetain=3}, a snapshot every 2 versions,
 * maintenance every 200 ms, segment journals rolled every 500 ms, a torn-file grace period of 1 s
 * (so sweeps run every second), a seeded {@link FaultPlan} with delete faults added on snapshots,
 * segments, probe files and Spark's logs, and this process's clock skewed by twice the grace period
 * (ahead in one schedule, behind in the other) for the engine's age decisions.
 *
 * <p>Each schedule must give the reference output (Spark's HDFS-backed provider, no faults), must
 * have deleted snapshots and segment journals (so it cannot pass by deleting nothing), and every
 * store of every operator must load each version of the retained window, with the reference's rows
 * at the last batch (through the state data source).
 */
class RetentionUnderFaultsIT {
  private static final int BATCHES = 20;
  private static final int PARTITIONS = 2;
  private static final int RETAIN = 3;
  private static final int MAX_RESTARTS = 12;

  /** The torn-file grace period {@link ReliabilityQuery#sessionConf} sets. */
  private static final long GRACE_MS = 1000;

  private static final Path work = Sessions.newWorkDir(RetentionUnderFaultsIT.class);
  private static final Path input = work.resolve("input");
  private static final Path referenceCheckpoint = work.resolve("reference").resolve("checkpoint");
  private static SparkSession spark;
  private static List<String> reference;

  @BeforeAll
  static void startSparkAndRunReference() throws Exception {
    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    conf.put("spark.sql.streaming.minBatchesToRetain", String.valueOf(RETAIN));
    conf.put(StreamStateConf.GROUP_COMMIT_JOURNAL_ROLL_MS, "500");
    assertThat(conf).containsEntry(StreamStateConf.TORN_FILE_GRACE_MS, String.valueOf(GRACE_MS));
    spark = ReliabilityQuery.start("RetentionUnderFaultsIT", "local[2,4]", conf);
    ReliabilityQuery.writeInput(input, 23, BATCHES);
    ReliabilityQuery.runToEnd(
        spark,
        ReliabilityQuery.HDFS,
        input,
        referenceCheckpoint.toUri().toString(),
        work.resolve("reference").resolve("out"),
        ReliabilityQuery.NO_FAULTS,
        0);
    reference = ReliabilityQuery.readOutput(work.resolve("reference").resolve("out"));
  }

  @AfterAll
  static void stopSpark() {
    StorageClock.useClocks(ProcessResources.shared(), System::currentTimeMillis, System::nanoTime);
    spark.stop();
  }

  @Test
  void sweeperClockAheadByTwiceTheGrace() throws Exception {
    runSchedule(3001, 2 * GRACE_MS);
  }

  @Test
  void sweeperClockBehindByTwiceTheGrace() throws Exception {
    runSchedule(3002, -2 * GRACE_MS);
  }

  /**
   * The generated schedule of {@code seed}, plus delete faults where retention, the sweep, the
   * storage clock's probes and Spark's log purge delete.
   */
  private static FaultPlan planWithDeleteFaults(long seed, String root) {
    FaultPlan generated = FaultPlan.generate(seed, root, BATCHES, PARTITIONS);
    List<FaultPlan.StorageFault> storage = new ArrayList<>(generated.storageFaults);
    Random r = new Random(seed);
    for (FaultPlan.Target target :
        List.of(
            FaultPlan.Target.SNAPSHOT,
            FaultPlan.Target.SNAPSHOT,
            FaultPlan.Target.SEGMENTS,
            FaultPlan.Target.SEGMENTS,
            FaultPlan.Target.OTHER,
            FaultPlan.Target.OFFSETS,
            FaultPlan.Target.COMMITS)) {
      storage.add(
          new FaultPlan.StorageFault(
              FaultPlan.Op.DELETE,
              target,
              1 + r.nextInt(6),
              r.nextBoolean() ? FaultPlan.Kind.ERROR_BEFORE : FaultPlan.Kind.ERROR_AFTER));
    }
    return new FaultPlan(seed, root, storage, generated.taskFaults);
  }

  private void runSchedule(long seed, long wallAheadOfStorage) throws Exception {
    assertThat(reference).as("reference output").hasSizeGreaterThan(10);
    Path dir = work.resolve("schedule-" + seed);
    Files.createDirectories(dir);
    String checkpoint = FaultInjectingFileSystem.uriOf(dir.resolve("checkpoint"));
    FaultPlan plan = planWithDeleteFaults(seed, dir.toAbsolutePath() + "/");
    // This process is the executor (local mode): its storage clocks, made for this schedule's
    // checkpoint, read a wall clock off by twice the grace period.
    AtomicLong skewedReads = new AtomicLong();
    StorageClock.useClocks(
        ProcessResources.shared(),
        () -> {
          skewedReads.incrementAndGet();
          return System.currentTimeMillis() + wallAheadOfStorage;
        },
        System::nanoTime);
    FaultPlan.install(plan);
    ReliabilityQuery.RunResult run;
    try {
      run =
          ReliabilityQuery.runToEnd(
              spark,
              ReliabilityQuery.OURS,
              input,
              checkpoint,
              dir.resolve("out"),
              seed,
              MAX_RESTARTS);
    } finally {
      FaultPlan.uninstall(plan);
      StorageClock.useClocks(
          ProcessResources.shared(), System::currentTimeMillis, System::nanoTime);
    }
    Map<FaultPlan.Target, Long> deleted = plan.deletedByTarget();
    System.out.printf(
        "retention schedule seed %d (clock %+d ms): fired %s; deleted %s; restarts %d %s%n",
        seed, wallAheadOfStorage, plan.firedFaults(), deleted, run.restarts(), run.failures());

    List<String> output = ReliabilityQuery.readOutput(dir.resolve("out"));
    ReliabilityQuery.Difference diff = ReliabilityQuery.Difference.of(reference, output);
    assertThat(diff.lost()).as("rows lost").isEmpty();
    assertThat(diff.doubled()).as("rows doubled").isEmpty();
    assertThat(plan.afterCommitFaultsNotProven()).isEmpty();
    assertThat(plan.firedStorageByTarget().keySet())
        .as("delete faults fired")
        .anyMatch(k -> k.startsWith("DELETE"));
    assertThat(skewedReads.get()).as("the skewed clock was read").isPositive();
    assertThat(deleted.getOrDefault(FaultPlan.Target.SNAPSHOT, 0L))
        .as("snapshots deleted by retention")
        .isPositive();
    assertThat(deleted.getOrDefault(FaultPlan.Target.SEGMENTS, 0L))
        .as("segment journals deleted by the sweep")
        .isPositive();
    assertRetainedWindowLoads(checkpoint);
  }

  /**
   * Every store of every operator loads each of the newest {@value #RETAIN} batches, and holds the
   * reference's rows at the last batch. (Only there: Spark's HDFS-backed provider with {@code
   * minBatchesToRetain=3} does not keep every version of the window loadable for the join's stores,
   * e.g. {@code 18.snapshot 19.delta 21.delta 21.snapshot}, so the reference cannot be read at the
   * batches before the last.)
   */
  private static void assertRetainedWindowLoads(String checkpoint) {
    Map<String, Map<String, String>> reads = new LinkedHashMap<>();
    long last = storeReads(checkpoint, reads);
    long referenceLast = storeReads(referenceCheckpoint.toUri().toString(), new LinkedHashMap<>());
    assertThat(reads.keySet()).as("stores read").hasSizeGreaterThanOrEqualTo(3);
    int nonEmpty = 0;
    for (long batch = last - RETAIN + 1; batch <= last; batch++) {
      for (Map<String, String> read : reads.values()) {
        nonEmpty += state(checkpoint, read, batch).isEmpty() ? 0 : 1;
      }
    }
    assertThat(nonEmpty).as("stores with state in the retained window").isPositive();
    for (Map.Entry<String, Map<String, String>> e : reads.entrySet()) {
      assertThat(state(checkpoint, e.getValue(), last))
          .as("state of %s at the last batch", e.getKey())
          .isEqualTo(state(referenceCheckpoint.toUri().toString(), e.getValue(), referenceLast));
    }
  }

  /**
   * Fills {@code reads} with the state data source options of each store of the checkpoint's
   * operators (a join's by side); returns the last batch.
   */
  private static long storeReads(String checkpoint, Map<String, Map<String, String>> reads) {
    List<Row> operators = spark.read().format("state-metadata").load(checkpoint).collectAsList();
    assertThat(operators).as("operators of %s", checkpoint).isNotEmpty();
    long last = -1;
    for (Row op : operators) {
      String id = String.valueOf(op.<Object>getAs("operatorId"));
      String name = String.valueOf(op.<Object>getAs("operatorName"));
      last = Math.max(last, ((Number) op.getAs("maxBatchId")).longValue());
      if (name.toLowerCase().contains("join")) {
        for (String side : List.of("left", "right")) {
          reads.put(id + "/" + side, Map.of("operatorId", id, "joinSide", side));
        }
      } else {
        String store = String.valueOf(op.<Object>getAs("stateStoreName"));
        reads.put(id + "/" + store, Map.of("operatorId", id, "storeName", store));
      }
    }
    return last;
  }

  private static List<String> state(String checkpoint, Map<String, String> options, long batch) {
    DataFrameReader reader =
        spark.read().format("statestore").option("batchId", String.valueOf(batch));
    options.forEach(reader::option);
    List<String> rows = new ArrayList<>();
    for (Row r : reader.load(checkpoint).collectAsList()) {
      rows.add(r.toString());
    }
    rows.sort(null);
    return rows;
  }
}
