package io.streamstate.bench.spark;

import io.streamstate.core.hedge.HedgeMetrics;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.DataStreamWriter;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;

/**
 * Side-by-side benchmark of streamstate's provider and Spark 4.2's built-in providers: same
 * queries, same deterministic input, same (simulated) storage.
 *
 * <pre>
 * SideBySideBenchmark --mode short|full|heap [--out DIR] [--rounds N] [--batches N]
 *                     [--storages local,s3,...] [--workloads window-agg,...]
 *                     [--providers streamstate,hdfs,...] [--keys N[,N]] [--rows-per-batch N]
 *                     [--shuffle-partitions N] [--local-threads N] [--matrix full|trimmed]
 *                     [--saturation-rows N] [--saturation-batches N] [--sink noop|parquet]
 * SideBySideBenchmark --report-only RESULTS_DIR [the run's mode and options]
 * </pre>
 *
 * <p>The process started by the user is the orchestrator: it creates {@code DIR/<timestamp>/},
 * starts one child JVM per round (same class path, same JVM flags, {@code -Xmx} from {@code
 * -Dbench.childXmx}), and when all rounds are done writes {@code results.md} and the charts. A
 * child runs every cell of its round in one Spark session ({@code local[N]}), each cell on a fresh
 * checkpoint, providers innermost so that they alternate (A B C D E A B C D E ...), the provider
 * order rotated by one each round; then the saturation cells (local disk, large batches, the
 * providers in the same rotated order).
 *
 * <p>Queries write to Spark's {@code noop} sink, or with {@code --sink parquet} to Parquet files
 * through Spark's file sink, in {@code DIR/<timestamp>/sink/<cell>-r<round>/} on the cell's storage
 * (next to its checkpoint, on the same simulated file system).
 *
 * <p>Heap mode ({@code --mode heap}) runs each cell in a JVM of its own (no leftovers of other
 * providers), without warm-up, and after every batch forces a full GC and records the heap used
 * after it and the process's resident set.
 */
public final class SideBySideBenchmark {
  /** Spark's tuned checkpoint file manager for its logs (no process per file), for everyone. */
  static final String SPARK_FILE_SYSTEM_MANAGER =
      "org.apache.spark.sql.execution.streaming.checkpointing."
          + "FileSystemBasedCheckpointFileManager";

  /** Counters of the simulated storage recorded per batch. */
  private static final String[] OP_COUNTERS = {
    "create",
    "write",
    "sync",
    "addBlock",
    "open",
    "rename",
    "delete",
    "mkdirs",
    "status",
    "list",
    "stateCreate",
    "stateSync",
    "stateAddBlock",
    "stateOpen",
    "stateRename",
    "stateDelete",
    "stateMkdirs",
    "stateStatus",
    "stateList",
    "sinkCreate",
    "sinkSync",
    "sinkAddBlock",
    "sinkOpen",
    "sinkRename",
    "sinkDelete",
    "sinkMkdirs",
    "sinkStatus",
    "sinkList",
    "metadataOps",
    "stateMetadataOps",
    "sinkMetadataOps",
    "filesWritten",
    "stateFilesWritten",
    "sinkFilesWritten",
    "bytesWritten",
    "bytesRead",
    "delayMs",
    "modelMs",
    "slowNodeWaits",
    "slowNodeWaitMs",
    "favoredCreates"
  };

  /** Columns of the per-batch CSV: the batch's identity and timings, the counters, the clock. */
  static final String[] CSV_COLUMNS =
      java.util.stream.Stream.of(
              new String[] {
                "round",
                "cell",
                "provider",
                "workload",
                "keys",
                "storage",
                "phase",
                "batchId",
                "triggerMs",
                "addBatchMs",
                "walCommitMs",
                "commitOffsetsMs",
                "commitMs",
                "stateRows",
                "inputRows",
                "heapMb",
                "heapAfterGcMb",
                "heapCommittedMb",
                "nonHeapCommittedMb",
                "rssMb",
                "rssAnonMb",
                "rssFileMb",
                "directBufferMb",
                "rocksdbCacheMb",
                "rocksdbPinnedMb",
                "rocksdbMemtableMb",
                "rocksdbTableReaderMb"
              },
              OP_COUNTERS,
              HedgeColumns.NAMES,
              new String[] {"sinceStartMs"})
          .flatMap(java.util.Arrays::stream)
          .toArray(String[]::new);

  private SideBySideBenchmark() {}

  public static void main(String[] args) throws Exception {
    Settings settings = Settings.parse(args);
    if (settings.childRound >= 0) {
      runRound(settings);
      return;
    }
    if (settings.reportOnly != null) {
      // Rewrites results.md and the charts of an earlier (or interrupted) run's folder.
      Report.write(Paths.get(settings.reportOnly), settings, -1);
      return;
    }
    // Before any round: a variant whose classes this build lacks fails now, not hours later.
    settings.requireClasses(SideBySideBenchmark::onClassPath);
    Path base = Paths.get(settings.out).toAbsolutePath();
    Path dir =
        base.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(dir);
    long start = System.nanoTime();
    System.out.printf(
        "side-by-side benchmark, %s mode: %d round(s), %d cells each, results in %s%n",
        settings.mode, settings.rounds, settings.cells(0).size(), dir);
    for (int round = 0; round < settings.rounds; round++) {
      if (settings.heap()) {
        // A JVM per cell: the heap and resident set then hold one provider's state only.
        for (int cell = 0; cell < settings.cells(round).size(); cell++) {
          forkRound(settings, dir, round, cell);
        }
      } else {
        forkRound(settings, dir, round, -1);
      }
    }
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
    Report.write(dir, settings, seconds);
    System.out.printf("done in %d s: %s%n", seconds, dir.resolve("results.md"));
  }

  private static void forkRound(Settings settings, Path dir, int round, int cell) throws Exception {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!arg.startsWith("-Xmx")
          && !arg.startsWith("-agentlib")
          && !arg.startsWith("-javaagent")) {
        cmd.add(arg);
      }
    }
    cmd.add("-Xmx" + System.getProperty("bench.childXmx", "6g"));
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SideBySideBenchmark.class.getName());
    cmd.addAll(settings.args);
    cmd.add("--child-round");
    cmd.add(Integer.toString(round));
    cmd.add("--dir");
    cmd.add(dir.toString());
    if (cell >= 0) {
      cmd.add("--child-cell");
      cmd.add(Integer.toString(cell));
    }
    ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO();
    pb.redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("spark-stderr.log").toFile()));
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    int rc = pb.start().waitFor();
    if (rc != 0) {
      System.out.printf(
          "round %d%s: child JVM exited with %d (see spark-stderr.log)%n",
          round, cell >= 0 ? " cell " + cell : "", rc);
    }
  }

  // ---- one round, in a child JVM ----

  private static void runRound(Settings settings) throws Exception {
    Path dir = Paths.get(settings.dir);
    int round = settings.childRound;
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
            .config("spark.sql.streaming.checkpointFileManagerClass", SPARK_FILE_SYSTEM_MANAGER)
            // Maintenance (snapshots, cleanup) often enough to fall inside short runs, for all.
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "5s")
            .config("spark.hadoop.fs.simfs.impl", SimulatedFileSystem.class.getName())
            .config("spark.hadoop.fs.simfs.seed", Long.toString(42 + round))
            .config("spark.hadoop.fs.simfs.stallScale", Double.toString(settings.stallScale))
            .config(extraConf(settings.confs))
            .getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    Recorder recorder = new Recorder();
    spark.streams().addListener(recorder);

    List<Cell> cells = settings.cells(round);
    if (settings.childCell >= 0) {
      cells = List.of(cells.get(settings.childCell));
    }
    Path csv =
        dir.resolve(
            "batches-round"
                + round
                + (settings.childCell >= 0 ? "-cell" + cells.get(0).id : "")
                + ".csv");
    Path runs = dir.resolve("runs.csv");
    try (PrintWriter out =
        new PrintWriter(
            Files.newBufferedWriter(
                csv, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING))) {
      out.println(String.join(",", CSV_COLUMNS));
      if (!settings.heap()) {
        warmUp(spark, recorder, settings, dir, round);
      }
      int i = 0;
      for (Cell cell : cells) {
        i++;
        long t0 = System.nanoTime();
        String outcome;
        try {
          outcome = runCell(spark, recorder, settings, dir, round, cell, out);
        } catch (Exception | Error e) {
          outcome = "failed: " + e.toString().replace('\n', ' ').replace(',', ';');
          e.printStackTrace();
        }
        out.flush();
        long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0);
        System.out.printf(
            "round %d cell %2d/%d %-10s %-18s %-10s %5dk %7d rows/batch %-14s %6d ms  %s%n",
            round,
            i,
            cells.size(),
            cell.kind,
            cell.provider.label,
            cell.workload.label,
            cell.keys / 1000,
            cell.rowsPerBatch,
            cell.storage,
            ms,
            outcome);
        Files.writeString(
            runs,
            String.join(
                    ",",
                    Integer.toString(round),
                    cell.id,
                    cell.kind,
                    cell.provider.label,
                    cell.workload.label,
                    Long.toString(cell.keys),
                    cell.storage,
                    Long.toString(ms),
                    outcome)
                + "\n",
            StandardOpenOption.CREATE,
            StandardOpenOption.APPEND);
        deleteQuietly(dir.resolve("checkpoints").resolve(cell.id + "-r" + round));
        deleteQuietly(dir.resolve("sink").resolve(cell.id + "-r" + round));
      }
    }
    spark.stop();
    deleteQuietly(dir.resolve("checkpoints"));
    deleteQuietly(dir.resolve("sink"));
  }

  /** Whether {@code className} can be loaded (without initializing it). */
  static boolean onClassPath(String className) {
    try {
      Class.forName(className, false, SideBySideBenchmark.class.getClassLoader());
      return true;
    } catch (ClassNotFoundException | LinkageError e) {
      return false;
    }
  }

  /**
   * Runs every workload briefly (small state, local disk, not recorded) so that class loading and
   * code generation do not land on whichever provider happens to run first.
   */
  private static void warmUp(
      SparkSession spark, Recorder recorder, Settings settings, Path dir, int round)
      throws Exception {
    long t0 = System.nanoTime();
    // Each workload once (code generation), then every provider of the round at the matrix's
    // first size for --warmup-batches batches (JIT of the hot paths at full batch size: with a
    // short warm-up the first cells after it ran 1.5x slower for their whole run), in the
    // round's order, on local disk.
    List<Cell> cells = new ArrayList<>();
    for (Workload w : settings.workloads) {
      cells.add(
          new Cell("warmup-" + w.label, "warmup", Provider.HDFS, w, 10_000, "local", 2_000, 3));
    }
    long keys = settings.keySizes.get(0);
    for (int p = 0; p < settings.providers.size(); p++) {
      Provider provider = settings.providers.get((p + round) % settings.providers.size());
      cells.add(
          new Cell(
              "warmup-" + provider.label,
              "warmup",
              provider,
              settings.workloads.get(0),
              keys,
              "local",
              settings.rowsPerBatch(keys),
              settings.warmupBatches));
    }
    for (Cell cell : cells) {
      configureProvider(spark, cell.provider());
      Path checkpoint = dir.resolve("checkpoints").resolve(cell.id() + "-r" + round);
      Path output = dir.resolve("sink").resolve(cell.id() + "-r" + round);
      runQuery(
          spark,
          recorder,
          settings,
          cell,
          round,
          checkpoint.toUri().toString(),
          settings.fileSink() ? output.toUri().toString() : null,
          null,
          "warmup",
          cell.batches(),
          120_000,
          null);
      deleteQuietly(checkpoint); // a stopped query's task may still be writing there
      deleteQuietly(output);
    }
    System.out.printf(
        "round %d warm-up: %d ms%n", round, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));
  }

  /**
   * The session confs of one provider label: its class, checkpoint file manager and variant (our
   * provider's keys, and the file sink's commit protocol).
   */
  private static void configureProvider(SparkSession spark, Provider provider) {
    spark.conf().set("spark.sql.streaming.stateStore.providerClass", provider.className);
    spark
        .conf()
        .set("spark.sql.streaming.checkpointFileManagerClass", provider.checkpointFileManager());
    // The variants: the keys this one does not set are unset, so they take our provider's (or
    // Spark's) defaults, and a variant never leaks into the next cell.
    Map<String, String> variant = provider.variantConfs();
    for (String key : Provider.VARIANT_KEYS) {
      if (variant.containsKey(key)) {
        spark.conf().set(key, variant.get(key));
      } else {
        spark.conf().unset(key);
      }
    }
    spark
        .conf()
        .set(
            "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled",
            Boolean.toString(provider.changelog));
  }

  private static String runCell(
      SparkSession spark,
      Recorder recorder,
      Settings settings,
      Path dir,
      int round,
      Cell cell,
      PrintWriter out)
      throws Exception {
    configureProvider(spark, cell.provider());
    Path checkpointDir = dir.resolve("checkpoints").resolve(cell.id + "-r" + round);
    // The file sink's output, next to the checkpoint, on the same storage.
    Path outputDir = dir.resolve("sink").resolve(cell.id + "-r" + round);
    String authority = null;
    String checkpoint;
    String output;
    if (cell.provider.discardsState || !cell.storage.equals("local")) {
      // One authority per cell and round: fresh counters and a freshly seeded latency model.
      String profile = cell.storage.equals("local") ? "none" : cell.storage;
      authority =
          profile + (cell.provider.discardsState ? "-nostate" : "") + ".c" + cell.id + "r" + round;
      checkpoint = "simfs://" + authority + checkpointDir;
      output = "simfs://" + authority + outputDir;
    } else {
      checkpoint = checkpointDir.toUri().toString();
      output = outputDir.toUri().toString();
    }
    if (!settings.fileSink()) {
      output = null;
    }
    long timeoutMs = settings.cellTimeoutMs(cell);
    if (settings.heap()) {
      recordHeapBaseline(cell, round, out);
    }
    String steady =
        runQuery(
            spark,
            recorder,
            settings,
            cell,
            round,
            checkpoint,
            output,
            authority,
            cell.kind.equals("saturation") ? "saturation" : "steady",
            cell.batches,
            timeoutMs,
            out);
    // No recovery run for the baseline (nothing to recover), the saturation runs (measured in the
    // matrix) and heap mode (memory only).
    if (cell.provider.discardsState || !cell.kind.equals("matrix")) {
      return steady;
    }
    String recovery =
        runQuery(
            spark,
            recorder,
            settings,
            cell,
            round,
            checkpoint,
            output,
            authority,
            "recovery",
            1,
            timeoutMs,
            out);
    return steady + "; recovery " + recovery;
  }

  /**
   * Runs one query until {@code batches} progress records (or the timeout), then stops it.
   *
   * @param output the file sink's directory (Parquet), or null for the {@code noop} sink
   */
  private static String runQuery(
      SparkSession spark,
      Recorder recorder,
      Settings settings,
      Cell cell,
      int round,
      String checkpoint,
      String output,
      String authority,
      String phase,
      int batches,
      long timeoutMs,
      PrintWriter out)
      throws Exception {
    String name = "c" + cell.id + "r" + round + "-" + phase;
    Recording rec =
        new Recording(
            name, batches, authority, Instant.now().toEpochMilli(), settings.heap() && out != null);
    recorder.current = rec;
    // Every workload's output is append-only (a watermarked aggregation, deduplication within the
    // watermark, an inner stream-stream join), which is all the file sink takes.
    DataStreamWriter<Row> writer =
        cell.workload
            .build(spark, cell.keys, cell.rowsPerBatch)
            .writeStream()
            .queryName(name)
            .outputMode("append")
            .option("checkpointLocation", checkpoint);
    StreamingQuery query =
        (output == null ? writer.format("noop") : writer.format("parquet").option("path", output))
            .start();
    long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    boolean complete = false;
    while (!complete && query.isActive() && System.nanoTime() < until) {
      complete = rec.done.await(200, TimeUnit.MILLISECONDS);
    }
    // Stop between two batches if one comes soon; else interrupt the running one, as a crash or
    // redeploy would (the restarted query redoes it): the trigger runs back to back.
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(300);
    while (query.status().isTriggerActive() && System.nanoTime() < deadline) {
      Thread.sleep(1);
    }
    query.stop();
    recorder.current = null;
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
    synchronized (rec) {
      if (out == null) {
        return result;
      }
      for (Map<String, Object> row : rec.rows) {
        writeRow(out, row, cell, round, phase);
      }
      return result + " (" + rec.rows.size() + " batches)";
    }
  }

  private static void writeRow(
      PrintWriter out, Map<String, Object> row, Cell cell, int round, String phase) {
    row.put("round", round);
    row.put("cell", cell.id);
    row.put("provider", cell.provider.label);
    row.put("workload", cell.workload.label);
    row.put("keys", cell.keys);
    row.put("storage", cell.storage);
    row.put("phase", phase);
    List<String> values = new ArrayList<>();
    for (String c : CSV_COLUMNS) {
      Object v = row.get(c);
      values.add(v == null ? "" : v.toString());
    }
    out.println(String.join(",", values));
  }

  /** Heap mode: the JVM's heap after a full GC and its resident set before the query starts. */
  private static void recordHeapBaseline(Cell cell, int round, PrintWriter out) {
    Map<String, Object> row = new HashMap<>();
    row.put("batchId", -1);
    row.putAll(sampleMemory());
    writeRow(out, row, cell, round, "baseline");
    out.flush();
  }

  /**
   * Forces a full GC ({@code System.gc()}; G1 collects fully unless told otherwise) and reads the
   * heap used after it and the process's resident set ({@code VmRSS} of /proc/self/status: heap,
   * RocksDB's native memory, code, threads, everything). The JVM's committed heap and non-heap
   * (metaspace, code cache) are recorded too: what the resident set holds beyond them is native
   * memory the JVM does not manage, RocksDB's among it.
   */
  static Map<String, Object> sampleMemory() {
    System.gc();
    Map<String, Object> m = new HashMap<>();
    var memory = ManagementFactory.getMemoryMXBean();
    m.put("heapAfterGcMb", memory.getHeapMemoryUsage().getUsed() >> 20);
    m.put("heapCommittedMb", memory.getHeapMemoryUsage().getCommitted() >> 20);
    m.put("nonHeapCommittedMb", memory.getNonHeapMemoryUsage().getCommitted() >> 20);
    m.put("rssMb", residentSetKb() >> 10);
    m.put("rssAnonMb", statusKb("RssAnon:") >> 10);
    m.put("rssFileMb", statusKb("RssFile:") >> 10);
    long direct = 0;
    for (var pool :
        ManagementFactory.getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
      direct += pool.getName().equals("direct") ? pool.getMemoryUsed() : 0;
    }
    m.put("directBufferMb", direct >> 20);
    // RocksDB's own account (zero for the built-in providers, which open no RocksDB of ours).
    Map<String, Long> rocks = io.streamstate.core.engine.local.RocksDbMemoryBudget.processUsage();
    m.put("rocksdbCacheMb", rocks.getOrDefault("blockCacheBytes", 0L) >> 20);
    m.put("rocksdbPinnedMb", rocks.getOrDefault("blockCachePinnedBytes", 0L) >> 20);
    m.put("rocksdbMemtableMb", rocks.getOrDefault("memtableBytes", 0L) >> 20);
    m.put("rocksdbTableReaderMb", rocks.getOrDefault("tableReaderBytes", 0L) >> 20);
    return m;
  }

  /** {@code VmRSS} in kB, or -1 where /proc is not there. */
  static long residentSetKb() {
    return statusKb("VmRSS:");
  }

  /** A kB field of /proc/self/status ({@code VmRSS:}, {@code RssAnon:}), or -1. */
  static long statusKb(String field) {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith(field)) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException | NumberFormatException e) {
      // not Linux
    }
    return -1;
  }

  /** One query's progress records. */
  private static final class Recording {
    final String name;
    final CountDownLatch done;
    final String authority;
    final long startEpochMs;
    final boolean sampleMemory;
    final List<Map<String, Object>> rows = new ArrayList<>();
    Map<String, Long> lastCounters;
    HedgeMetrics.Snapshot[] lastHedges;

    Recording(String name, int batches, String authority, long startEpochMs, boolean sampleMemory) {
      this.name = name;
      this.done = new CountDownLatch(batches);
      this.authority = authority;
      this.startEpochMs = startEpochMs;
      this.sampleMemory = sampleMemory;
      this.lastCounters =
          authority == null ? null : SimulatedFileSystem.counters(authority).snapshot();
      this.lastHedges = HedgeColumns.now();
    }
  }

  /** Records every progress of the current query. */
  private static final class Recorder extends StreamingQueryListener {
    volatile Recording current;

    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      StreamingQueryProgress p = event.progress();
      Recording rec = current;
      if (rec == null || !rec.name.equals(p.name())) {
        return;
      }
      Map<String, Long> d = p.durationMs();
      Map<String, Object> row = new HashMap<>();
      row.put("batchId", p.batchId());
      row.put("triggerMs", d.getOrDefault("triggerExecution", 0L));
      row.put("addBatchMs", d.getOrDefault("addBatch", 0L));
      // Spark's own log writes, timed by Spark: offsets/N before the batch, commits/N after it.
      row.put("walCommitMs", d.getOrDefault("walCommit", 0L));
      row.put("commitOffsetsMs", d.getOrDefault("commitOffsets", 0L));
      long commit = 0;
      long stateRows = 0;
      for (StateOperatorProgress op : p.stateOperators()) {
        commit += op.commitTimeMs();
        stateRows += op.numRowsTotal();
      }
      row.put("commitMs", commit);
      row.put("stateRows", stateRows);
      row.put("inputRows", p.numInputRows());
      Runtime rt = Runtime.getRuntime();
      row.put("heapMb", (rt.totalMemory() - rt.freeMemory()) >> 20);
      long end =
          Instant.parse(p.timestamp()).toEpochMilli() + d.getOrDefault("triggerExecution", 0L);
      row.put("sinceStartMs", end - rec.startEpochMs);
      long left = rec.done.getCount();
      if (rec.sampleMemory && left > 0 && (left <= 3 || p.batchId() % 3 == 0)) {
        // The last three batches (the report's figures) and every third before them (the chart).
        // On the listener thread, so the next batch is already running: its working memory is in
        // the figure, the same for every provider.
        row.putAll(sampleMemory());
      }
      synchronized (rec) {
        if (rec.authority != null) {
          Map<String, Long> now = SimulatedFileSystem.counters(rec.authority).snapshot();
          for (String k : OP_COUNTERS) {
            row.put(k, now.getOrDefault(k, 0L) - rec.lastCounters.getOrDefault(k, 0L));
          }
          rec.lastCounters = now;
        }
        rec.lastHedges = HedgeColumns.record(row, rec.lastHedges);
        if (rec.done.getCount() > 0) {
          rec.rows.add(row);
        }
      }
      rec.done.countDown();
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
  }

  // ---- the matrix ----

  enum Provider {
    STREAMSTATE("streamstate", "io.streamstate.spark.StreamStateProvider", false, false),
    /** Ours with hedged writes off: what hedging buys, measured in the same run. */
    STREAMSTATE_NOHEDGE(
        "streamstate-nohedge", "io.streamstate.spark.StreamStateProvider", false, false),
    /** Ours with group commit off: what group commit buys, measured in the same run. */
    STREAMSTATE_NOGROUP(
        "streamstate-nogroup", "io.streamstate.spark.StreamStateProvider", false, false),
    /** Ours with our rename-free checkpoint file manager for Spark's logs (hedged on HDFS-like). */
    STREAMSTATE_RFLOGS(
        "streamstate-rflogs", "io.streamstate.spark.StreamStateProvider", false, false),
    /** {@code streamstate-rflogs} with uncompressed changelogs: what compression buys. */
    STREAMSTATE_RFLOGS_RAW(
        "streamstate-rflogs-raw", "io.streamstate.spark.StreamStateProvider", false, false),
    /**
     * {@code streamstate-rflogs} with a segment file per group commit instead of appends to a
     * segment journal: what the journal buys.
     */
    STREAMSTATE_RFLOGS_FILES(
        "streamstate-rflogs-files", "io.streamstate.spark.StreamStateProvider", false, false),
    /**
     * {@code streamstate-rflogs} with Spark's offset and commit logs in log journals too (opt-in:
     * {@code logJournal.enabled}): no metadata request per batch anywhere.
     */
    STREAMSTATE_LOGJOURNAL(
        "streamstate-logjournal", "io.streamstate.spark.StreamStateProvider", false, false),
    /**
     * Ours with nothing of the batch left to a single slow write: {@code streamstate-logjournal}
     * (our checkpoint file manager, Spark's logs in log journals) and the file sink's part files
     * committed by {@code io.streamstate.spark.HedgedFileCommitProtocol}.
     */
    STREAMSTATE_TAILFREE(
        "streamstate-tailfree", "io.streamstate.spark.StreamStateProvider", false, false),
    /** {@code streamstate-tailfree} with {@code hedge.enabled=false}: what hedging costs. */
    STREAMSTATE_TAILFREE_NOHEDGE(
        "streamstate-tailfree-nohedge", "io.streamstate.spark.StreamStateProvider", false, false),
    HDFS(
        "hdfs",
        "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
        false,
        false),
    ROCKSDB(
        "rocksdb",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        false,
        false),
    ROCKSDB_CHANGELOG(
        "rocksdb-changelog",
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider",
        true,
        false),
    NO_DURABILITY("no-durability", "io.streamstate.spark.StreamStateProvider", false, true);

    /** Our provider's switches that a variant turns off (the provider's default: true). */
    static final String HEDGE_ENABLED = "spark.sql.streaming.stateStore.streamstate.hedge.enabled";

    static final String GROUP_COMMIT_ENABLED =
        "spark.sql.streaming.stateStore.streamstate.groupCommit.enabled";

    static final String GROUP_COMMIT_JOURNAL =
        "spark.sql.streaming.stateStore.streamstate.groupCommit.journal";
    static final String LOG_JOURNAL =
        "spark.sql.streaming.stateStore.streamstate.logJournal.enabled";
    static final String CHANGELOG_CODEC =
        "spark.sql.streaming.stateStore.streamstate.changelog.codec";

    /** Spark's (internal) key for the file sink's commit protocol. */
    static final String COMMIT_PROTOCOL = "spark.sql.streaming.commitProtocolClass";

    /** Our hedged commit protocol for the file sink, named only: not every build has it. */
    static final String HEDGED_COMMIT_PROTOCOL = "io.streamstate.spark.HedgedFileCommitProtocol";

    /** The SQL confs the variants set; each cell sets its own and unsets the others. */
    static final List<String> VARIANT_KEYS =
        List.of(
            HEDGE_ENABLED,
            GROUP_COMMIT_ENABLED,
            CHANGELOG_CODEC,
            GROUP_COMMIT_JOURNAL,
            LOG_JOURNAL,
            COMMIT_PROTOCOL);

    static Provider byLabel(String label) {
      for (Provider p : values()) {
        if (p.label.equals(label)) {
          return p;
        }
      }
      throw new IllegalArgumentException("Unknown provider " + label);
    }

    /**
     * The SQL confs of this label's variant (empty: every default, ours and Spark's); the keys are
     * among {@link #VARIANT_KEYS}.
     */
    Map<String, String> variantConfs() {
      return switch (this) {
        case STREAMSTATE_NOHEDGE -> Map.of(HEDGE_ENABLED, "false");
        case STREAMSTATE_NOGROUP -> Map.of(GROUP_COMMIT_ENABLED, "false");
        case STREAMSTATE_RFLOGS_RAW -> Map.of(CHANGELOG_CODEC, "none");
        case STREAMSTATE_RFLOGS_FILES -> Map.of(GROUP_COMMIT_JOURNAL, "false");
        case STREAMSTATE_LOGJOURNAL -> Map.of(LOG_JOURNAL, "true");
        case STREAMSTATE_TAILFREE ->
            Map.of(LOG_JOURNAL, "true", COMMIT_PROTOCOL, HEDGED_COMMIT_PROTOCOL);
        case STREAMSTATE_TAILFREE_NOHEDGE ->
            Map.of(
                LOG_JOURNAL,
                "true",
                COMMIT_PROTOCOL,
                HEDGED_COMMIT_PROTOCOL,
                HEDGE_ENABLED,
                "false");
        default -> Map.of();
      };
    }

    /**
     * Classes this label names by configuration only, which a build may lack: the tail-free
     * variants' commit protocol.
     */
    List<String> requiredClasses() {
      String protocol = variantConfs().get(COMMIT_PROTOCOL);
      return protocol == null ? List.of() : List.of(protocol);
    }

    /** A variant of ours that runs only when {@code --providers} names it. */
    boolean onRequestOnly() {
      return className.equals(STREAMSTATE.className) && this != STREAMSTATE && !discardsState;
    }

    /** The checkpoint file manager of Spark's own logs for this label. */
    String checkpointFileManager() {
      return this == STREAMSTATE_RFLOGS
              || this == STREAMSTATE_RFLOGS_RAW
              || this == STREAMSTATE_RFLOGS_FILES
              || this == STREAMSTATE_LOGJOURNAL
              || this == STREAMSTATE_TAILFREE
              || this == STREAMSTATE_TAILFREE_NOHEDGE
          ? "io.streamstate.spark.RenameFreeCheckpointFileManager"
          : SPARK_FILE_SYSTEM_MANAGER;
    }

    final String label;
    final String className;
    final boolean changelog;
    final boolean discardsState;

    Provider(String label, String className, boolean changelog, boolean discardsState) {
      this.label = label;
      this.className = className;
      this.changelog = changelog;
      this.discardsState = discardsState;
    }
  }

  /**
   * One run: {@code kind} is {@code matrix} (steady phase, then recovery), {@code saturation}
   * (steady phase only, large batches) or {@code heap} (steady phase only, memory sampled).
   */
  record Cell(
      String id,
      String kind,
      Provider provider,
      Workload workload,
      long keys,
      String storage,
      long rowsPerBatch,
      int batches) {}

  private static org.apache.spark.SparkConf extraConf(Map<String, String> confs) {
    org.apache.spark.SparkConf conf = new org.apache.spark.SparkConf(false);
    confs.forEach(conf::set);
    return conf;
  }

  /** Mode and overrides. */
  static final class Settings {
    final List<String> args = new ArrayList<>();
    String mode = "short";
    String out = "bench/target/results";
    String dir;
    int childRound = -1;
    int childCell = -1;
    String reportOnly;
    int rounds;
    Integer batchesOverride;
    Long rowsPerBatchOverride;
    List<String> storages;
    List<Workload> workloads;
    List<Provider> providers;
    List<Long> keySizes;
    int shufflePartitions = 4;
    int localThreads = 2;
    String matrix;
    long saturationRows = -1;
    int saturationBatches;
    double stallScale;
    int warmupBatches = 8;

    /** {@code noop} (Spark's sink that discards) or {@code parquet} (Spark's file sink). */
    String sink = "noop";

    /** Extra session confs ({@code --conf k=v,k=v}), for every cell: to measure a knob. */
    final Map<String, String> confs = new java.util.LinkedHashMap<>();

    static Settings parse(String[] argv) {
      Settings s = new Settings();
      for (int i = 0; i < argv.length; i++) {
        String a = argv[i];
        String v = i + 1 < argv.length ? argv[i + 1] : null;
        if (v == null) {
          throw new IllegalArgumentException("Missing value after " + a);
        }
        switch (a) {
          case "--mode" -> s.mode = v;
          case "--out" -> s.out = v;
          case "--dir" -> s.dir = v;
          case "--child-round" -> s.childRound = Integer.parseInt(v);
          case "--child-cell" -> s.childCell = Integer.parseInt(v);
          case "--report-only" -> s.reportOnly = v;
          case "--rounds" -> s.rounds = Integer.parseInt(v);
          case "--batches" -> s.batchesOverride = Integer.parseInt(v);
          case "--rows-per-batch" -> s.rowsPerBatchOverride = Long.parseLong(v);
          case "--storages" -> s.storages = List.of(v.split(","));
          case "--workloads" ->
              s.workloads = Stream.of(v.split(",")).map(Workload::byLabel).toList();
          case "--providers" ->
              s.providers = Stream.of(v.split(",")).map(Provider::byLabel).toList();
          case "--keys" -> s.keySizes = Stream.of(v.split(",")).map(Long::parseLong).toList();
          case "--shuffle-partitions" -> s.shufflePartitions = Integer.parseInt(v);
          case "--local-threads" -> s.localThreads = Integer.parseInt(v);
          case "--matrix" -> s.matrix = v;
          case "--saturation-rows" -> s.saturationRows = Long.parseLong(v);
          case "--saturation-batches" -> s.saturationBatches = Integer.parseInt(v);
          case "--warmup-batches" -> s.warmupBatches = Integer.parseInt(v);
          case "--sink" -> s.sink = v;
          case "--conf" -> {
            for (String kv : v.split(",")) {
              int eq = kv.indexOf('=');
              if (eq < 1) {
                throw new IllegalArgumentException("--conf takes key=value[,key=value]: " + kv);
              }
              s.confs.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            }
          }
          default -> throw new IllegalArgumentException("Unknown argument " + a);
        }
        i++;
        if (!a.equals("--child-round") && !a.equals("--dir") && !a.equals("--child-cell")) {
          s.args.add(a);
          s.args.add(v);
        }
      }
      if (!List.of("short", "full", "heap").contains(s.mode)) {
        throw new IllegalArgumentException("--mode is short, full or heap, not " + s.mode);
      }
      boolean full = s.mode.equals("full");
      boolean heap = s.mode.equals("heap");
      if (s.rounds == 0) {
        s.rounds = full ? 3 : 1;
      }
      if (s.keySizes == null) {
        s.keySizes =
            full ? List.of(100_000L, 10_000_000L) : heap ? List.of(10_000_000L) : List.of(100_000L);
      }
      if (s.storages == null) {
        s.storages =
            heap ? List.of("local") : List.of("local", "slow-datanode", "busy-namenode", "s3");
      }
      if (s.workloads == null) {
        s.workloads = heap ? List.of(Workload.WINDOW_AGG) : List.of(Workload.values());
      }
      if (s.providers == null) {
        s.providers =
            heap
                // 10M keys take about 6 min per provider on 2 quiet cores: the two the issue
                // compares by default, `--providers streamstate,hdfs,rocksdb` adds RocksDB.
                ? List.of(Provider.STREAMSTATE, Provider.HDFS)
                // streamstate-nohedge and streamstate-nogroup are on request only (--providers),
                // for the effect of hedging and of group commit.
                : Stream.of(Provider.values()).filter(p -> !p.onRequestOnly()).toList();
      }
      if (s.matrix == null) {
        s.matrix = s.mode.equals("short") ? "trimmed" : "full";
      }
      if (!s.matrix.equals("full") && !s.matrix.equals("trimmed")) {
        throw new IllegalArgumentException("--matrix is full or trimmed, not " + s.matrix);
      }
      if (s.saturationRows < 0) {
        s.saturationRows = heap ? 0 : full ? 500_000 : 100_000;
      }
      if (s.saturationBatches == 0) {
        s.saturationBatches = full ? 10 : 5;
      }
      s.stallScale = full ? 1.0 : 0.1;
      if (!s.sink.equals("noop") && !s.sink.equals("parquet")) {
        throw new IllegalArgumentException("--sink is noop or parquet, not " + s.sink);
      }
      if (s.shufflePartitions < 1 || s.localThreads < 1) {
        throw new IllegalArgumentException("--shuffle-partitions and --local-threads must be >= 1");
      }
      for (String storage : s.storages) {
        if (!storage.equals("local") && !LatencyModel.isKnown(storage)) {
          throw new IllegalArgumentException("Unknown storage " + storage);
        }
      }
      return s;
    }

    boolean full() {
      return mode.equals("full");
    }

    /** Whether queries write Parquet through Spark's file sink ({@code --sink parquet}). */
    boolean fileSink() {
      return sink.equals("parquet");
    }

    /**
     * Fails if a provider of this run names a class that {@code onClassPath} says is absent (the
     * tail-free variants' commit protocol, when this build does not have it).
     */
    void requireClasses(java.util.function.Predicate<String> onClassPath) {
      for (Provider p : providers) {
        for (String c : p.requiredClasses()) {
          if (!onClassPath.test(c)) {
            throw new IllegalArgumentException(
                "Provider "
                    + p.label
                    + " needs "
                    + c
                    + " (set as "
                    + Provider.COMMIT_PROTOCOL
                    + "), which is not on the class path: build a version of the spark module that"
                    + " has it, or leave "
                    + p.label
                    + " out of --providers");
          }
        }
      }
    }

    boolean heap() {
      return mode.equals("heap");
    }

    int batches(long keys) {
      if (batchesOverride != null) {
        return batchesOverride;
      }
      if (heap()) {
        // The state is full after `keys` input rows (batch 9 at keys/10 rows per batch); the
        // samples after batches 9, 10 and 11 are the figures.
        return 12;
      }
      if (!full()) {
        return 6;
      }
      return keys > 1_000_000 ? 40 : 30;
    }

    long rowsPerBatch(long keys) {
      if (rowsPerBatchOverride != null) {
        return rowsPerBatchOverride;
      }
      if (heap()) {
        return Math.max(1, keys / 10);
      }
      return keys > 1_000_000 ? 500_000 : keys / 5;
    }

    long cellTimeoutMs(Cell cell) {
      if (heap()) {
        return 30 * 60_000L;
      }
      long perBatch = cell.keys > 1_000_000 || cell.rowsPerBatch > 200_000 ? 60_000L : 15_000L;
      return perBatch * (cell.batches + 4);
    }

    /**
     * Whether the trimmed matrix (short mode's default, to stay under 10 minutes) runs this
     * combination: the no-durability baseline on local disk only, and on {@code s3} (the slowest
     * storage) the seed job only.
     */
    boolean runs(Provider provider, Workload workload, String storage) {
      if (matrix.equals("full")) {
        return true;
      }
      if (provider.discardsState && !storage.equals("local")) {
        return false;
      }
      return !storage.equals("s3") || workload == Workload.WINDOW_AGG;
    }

    /**
     * The cells of one round, providers innermost, their order rotated by {@code round}; then the
     * saturation cells (seed job, local disk, the first key size, {@code --saturation-rows} per
     * batch), providers in the same order.
     */
    List<Cell> cells(int round) {
      List<Cell> cells = new ArrayList<>();
      int n = 0;
      String kind = heap() ? "heap" : "matrix";
      for (long keys : keySizes) {
        for (String storage : storages) {
          for (Workload w : workloads) {
            for (int p = 0; p < providers.size(); p++) {
              Provider provider = providers.get((p + round) % providers.size());
              if (runs(provider, w, storage)) {
                cells.add(
                    new Cell(
                        String.format(Locale.ROOT, "%03d", n++),
                        kind,
                        provider,
                        w,
                        keys,
                        storage,
                        rowsPerBatch(keys),
                        batches(keys)));
              }
            }
          }
        }
      }
      if (saturationRows > 0) {
        for (int p = 0; p < providers.size(); p++) {
          Provider provider = providers.get((p + round) % providers.size());
          cells.add(
              new Cell(
                  String.format(Locale.ROOT, "%03d", n++),
                  "saturation",
                  provider,
                  Workload.WINDOW_AGG,
                  keySizes.get(0),
                  "local",
                  saturationRows,
                  saturationBatches));
        }
      }
      return cells;
    }
  }

  /** Best effort: a task of a stopped query may still be writing there. */
  static void deleteQuietly(Path root) {
    try {
      deleteRecursively(root);
    } catch (UncheckedIOException e) {
      // left for the end of the round
    }
  }

  static void deleteRecursively(Path root) {
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
