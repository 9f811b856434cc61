package io.streamstate.bench.spark;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamWriter;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * One round, in a child JVM: one Spark session ({@code local[N]}), the warm-up (not recorded), then
 * every cell of the round in the {@link RoundPlan}'s order (heap mode: the one cell it is told),
 * each on a fresh checkpoint. A matrix cell is a steady phase, then a restart on the same
 * checkpoint for one batch (recovery); a saturation or heap cell the steady phase only. Batches go
 * to the round's {@link BatchCsv}, one line a cell with its outcome to {@code runs.csv}.
 */
final class RoundRunner {
  /** How long a stop waits for a gap between batches before it interrupts the running one. */
  private static final long STOP_GRACE_MS = 300;

  private final BenchSettings settings;
  private final Path dir;
  private final int round;
  private final SparkSession spark;
  private final BatchRecorder recorder = new BatchRecorder();

  private RoundRunner(BenchSettings settings, SparkSession spark) {
    this.settings = settings;
    this.dir = Paths.get(settings.dir);
    this.round = settings.childRound;
    this.spark = spark;
    spark.streams().addListener(recorder);
  }

  /** Runs the round (and cell) that {@code settings}' child-JVM options name. */
  static void run(BenchSettings settings) throws Exception {
    SparkSession spark = openSession(settings);
    RoundRunner runner = new RoundRunner(settings, spark);
    runner.runCells();
    spark.stop();
    deleteQuietly(runner.dir.resolve("checkpoints"));
    deleteQuietly(runner.dir.resolve("sink"));
  }

  private static SparkSession openSession(BenchSettings settings) {
    SparkConf extra = new SparkConf(false);
    settings.confs.forEach(extra::set);
    SparkSession spark =
        SparkSession.builder()
            .master("local[" + settings.localThreads + "]")
            .appName("streamstate-side-by-side")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", Integer.toString(settings.shufflePartitions))
            .config("spark.sql.adaptive.enabled", "false")
            // Built-ins as a tuned user runs them on a Hadoop file system: no process per file.
            .config(
                "spark.sql.streaming.checkpointFileManagerClass",
                Provider.SPARK_FILE_SYSTEM_MANAGER)
            // Maintenance (snapshots, cleanup) often enough to fall inside short runs, for all.
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "5s")
            .config("spark.hadoop.fs.simfs.impl", SimulatedFileSystem.class.getName())
            .config("spark.hadoop.fs.simfs.seed", Long.toString(42 + settings.childRound))
            .config("spark.hadoop.fs.simfs.stallScale", Double.toString(settings.stallScale))
            .config(extra)
            .getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    return spark;
  }

  private void runCells() throws Exception {
    RoundPlan plan = new RoundPlan(settings);
    List<Cell> cells = plan.cells(round);
    if (settings.childCell >= 0) {
      cells = List.of(cells.get(settings.childCell));
    }
    try (BatchCsv csv =
        BatchCsv.create(dir, round, settings.childCell >= 0 ? cells.get(0) : null)) {
      if (!settings.heap()) {
        warmUp(plan);
      }
      int i = 0;
      for (Cell cell : cells) {
        i++;
        long t0 = System.nanoTime();
        String outcome;
        try {
          outcome = runCell(cell, csv);
        } catch (Exception | Error e) {
          outcome = "failed: " + e.toString().replace('\n', ' ').replace(',', ';');
          e.printStackTrace();
        }
        csv.flush();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.printf(
            "round %d cell %2d/%d %-10s %-18s %-10s %5dk %7d rows/batch %-14s %6d ms  %s%n",
            round,
            i,
            cells.size(),
            cell.kind(),
            cell.provider().label,
            cell.workload().label,
            cell.keys() / 1000,
            cell.rowsPerBatch(),
            cell.storage(),
            ms,
            outcome);
        appendRun(cell, ms, outcome);
        discard(cell);
      }
    }
  }

  /**
   * Runs the {@link RoundPlan#warmUp warm-up} so that class loading, code generation and JIT do not
   * land on whichever provider happens to run first.
   */
  private void warmUp(RoundPlan plan) throws Exception {
    long t0 = System.nanoTime();
    for (Cell cell : plan.warmUp(round)) {
      cell.provider().applyTo(spark.conf());
      runQuery(cell, localTarget(cell), "warmup", cell.batches(), 120_000, null);
      discard(cell); // a stopped query's task may still be writing there
    }
    System.out.printf(
        "round %d warm-up: %d ms%n", round, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
  }

  private String runCell(Cell cell, BatchCsv csv) throws Exception {
    cell.provider().applyTo(spark.conf());
    Target target = target(cell);
    long timeoutMs = settings.cellTimeoutMs(cell);
    if (settings.heap()) {
      recordHeapBaseline(cell, csv);
    }
    String steady =
        runQuery(
            cell,
            target,
            cell.kind().equals("saturation") ? "saturation" : "steady",
            cell.batches(),
            timeoutMs,
            csv);
    // No recovery run for the baseline (nothing to recover) and the saturation runs (measured in
    // the matrix).
    if (cell.provider().discardsState || cell.kind().equals("saturation")) {
      return steady;
    }
    if (settings.heap()) {
      // Heap mode, one JVM per cell: close every store of the stopped run first (Spark's
      // StateStore.stop), so the restart loads each from durable storage into a new provider
      // instance with a fresh local directory, as an executor that never held the state would,
      // and the old run's memory is not counted twice.
      org.apache.spark.sql.execution.streaming.state.StateStore$.MODULE$.stop();
    }
    String recovery = runQuery(cell, target, "recovery", 1, timeoutMs, csv);
    return steady + "; recovery " + recovery;
  }

  /**
   * Where a query writes: its checkpoint, the file sink's directory (null: the {@code noop} sink),
   * and the simulated file system's authority whose counters it records (null: local disk).
   */
  private record Target(String checkpoint, String output, String authority) {}

  /**
   * A cell's checkpoint and sink: on its storage's simulated file system, or on the local disk for
   * the providers that keep their state there ({@code no-durability} always goes through the
   * simulated file system, which discards its state files).
   */
  private Target target(Cell cell) {
    if (!cell.provider().discardsState && cell.storage().equals("local")) {
      return localTarget(cell);
    }
    // One authority per cell and round: fresh counters and a freshly seeded latency model.
    String profile = cell.storage().equals("local") ? "none" : cell.storage();
    String authority =
        profile
            + (cell.provider().discardsState ? "-nostate" : "")
            + ".c"
            + cell.id()
            + "r"
            + round;
    return new Target(
        "simfs://" + authority + checkpointDir(cell),
        settings.fileSink() ? "simfs://" + authority + sinkDir(cell) : null,
        authority);
  }

  /** A cell's checkpoint and sink on the local disk ({@code file:}), no counters. */
  private Target localTarget(Cell cell) {
    return new Target(
        checkpointDir(cell).toUri().toString(),
        settings.fileSink() ? sinkDir(cell).toUri().toString() : null,
        null);
  }

  private Path checkpointDir(Cell cell) {
    return dir.resolve("checkpoints").resolve(cell.id() + "-r" + round);
  }

  /** The file sink's output, next to the checkpoint, on the same storage. */
  private Path sinkDir(Cell cell) {
    return dir.resolve("sink").resolve(cell.id() + "-r" + round);
  }

  /**
   * Runs one query until {@code batches} progress records (or the timeout), then stops it; writes
   * the batches to {@code csv} (null: not recorded) and returns the outcome.
   */
  private String runQuery(
      Cell cell, Target target, String phase, int batches, long timeoutMs, BatchCsv csv)
      throws Exception {
    String name = "c" + cell.id() + "r" + round + "-" + phase;
    BatchRecorder.Recording rec =
        recorder.start(name, batches, target.authority(), settings.heap() && csv != null);
    // Every workload's output is append-only (a watermarked aggregation, deduplication within the
    // watermark, an inner stream-stream join), which is all the file sink takes.
    DataStreamWriter<Row> writer =
        cell.workload()
            .build(spark, cell.keys(), cell.rowsPerBatch())
            .writeStream()
            .queryName(name)
            .outputMode("append")
            .option("checkpointLocation", target.checkpoint());
    StreamingQuery query =
        (target.output() == null
                ? writer.format("noop")
                : writer.format("parquet").option("path", target.output()))
            .start();
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    boolean complete = false;
    while (!complete && query.isActive() && System.nanoTime() < until) {
      complete = rec.await(200);
    }
    // Stop between two batches if one comes soon; else interrupt the running one, as a crash or
    // redeploy would (the restarted query redoes it): the trigger runs back to back.
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MS);
    while (query.status().isTriggerActive() && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    query.stop();
    recorder.stop();
    String result;
    if (complete) {
      // An exception now comes from the stop interrupting the batch after the last recorded one.
      result = query.exception().isDefined() ? "ok (stop interrupted a batch)" : "ok";
    } else if (query.exception().isDefined()) {
      String message = String.valueOf(query.exception().get().getMessage());
      result = "error " + message.split("\n")[0].replace(',', ';');
    } else {
      result = "timeout";
    }
    if (csv == null) {
      return result;
    }
    List<Map<String, Object>> rows = rec.rows();
    for (Map<String, Object> row : rows) {
      csv.write(row, cell, round, phase);
    }
    return result + " (" + rows.size() + " batches)";
  }

  /** Heap mode: the JVM's heap after a full GC and its resident set before the query starts. */
  private void recordHeapBaseline(Cell cell, BatchCsv csv) {
    Map<String, Object> row = new HashMap<>();
    row.put("batchId", -1);
    row.putAll(MemorySampler.sample());
    csv.write(row, cell, round, "baseline");
    csv.flush();
  }

  /** Appends the cell's line to {@code runs.csv}: its identity, duration and outcome. */
  private void appendRun(Cell cell, long ms, String outcome) throws IOException {
    Files.writeString(
        dir.resolve("runs.csv"),
        String.join(
                ",",
                Integer.toString(round),
                cell.id(),
                cell.kind(),
                cell.provider().label,
                cell.workload().label,
                Long.toString(cell.keys()),
                cell.storage(),
                Long.toString(ms),
                outcome)
            + "\n",
        StandardOpenOption.CREATE,
        StandardOpenOption.APPEND);
  }

  /** Deletes the cell's checkpoint and sink output. */
  private void discard(Cell cell) {
    deleteQuietly(checkpointDir(cell));
    deleteQuietly(sinkDir(cell));
  }

  /** Best effort: a task of a stopped query may still be writing there. */
  private static void deleteQuietly(Path root) {
    if (!Files.exists(root)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException | UncheckedIOException e) {
      // left for the end of the round
    }
  }
}
