package io.streamstate.spark.reliability;

import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.length;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;

import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.StreamStateProvider;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryException;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The one deterministic query of the reliability tests, its input and its idempotent sink.
 *
 * <p>Query: left events are deduplicated by {@code (id, lts)} ({@code dropDuplicates} with a
 * watermark), joined to right events on the key within 5 seconds of event time (a stream-stream
 * join with several rows per key per batch), and the joined rows are counted and summed per key and
 * 10-second window of the left event time (windowed aggregation, append mode): three stateful
 * operators in one query. Input: a directory per side with one JSON file per batch, read with
 * {@code maxFilesPerTrigger=1}, so the offset log fixes what each batch holds across restarts.
 * Sink: {@code foreachBatch} writing {@code batch-<id>.txt} (temp file, then atomic replace), so a
 * batch run again replaces its own file.
 */
public final class ReliabilityQuery {
  static final String OURS = StreamStateProvider.class.getName();
  static final String HDFS =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";

  static final StructType LEFT =
      new StructType()
          .add("id", DataTypes.LongType)
          .add("lkey", DataTypes.StringType)
          .add("lts", DataTypes.TimestampType)
          .add("lval", DataTypes.LongType);
  static final StructType RIGHT =
      new StructType()
          .add("rkey", DataTypes.StringType)
          .add("rts", DataTypes.TimestampType)
          .add("rval", DataTypes.LongType);

  private ReliabilityQuery() {}

  /** Settings every session of these tests shares (local or cluster master set by the caller). */
  public static Map<String, String> sessionConf(Path workDir) {
    Map<String, String> conf = new LinkedHashMap<>();
    conf.put("spark.ui.enabled", "false");
    conf.put("spark.sql.session.timeZone", "UTC");
    conf.put("spark.driver.host", "127.0.0.1");
    conf.put("spark.driver.bindAddress", "127.0.0.1");
    conf.put("spark.local.dir", workDir.resolve("spark-local").toString());
    conf.put("spark.sql.shuffle.partitions", "2");
    conf.put("spark.sql.warehouse.dir", workDir.resolve("warehouse").toString());
    conf.put(
        "spark.sql.streaming.checkpointFileManagerClass",
        RenameFreeCheckpointFileManager.class.getName());
    conf.put(
        "spark.hadoop.fs." + FaultInjectingFileSystem.SCHEME + ".impl",
        FaultInjectingFileSystem.class.getName());
    // Frequent maintenance and snapshots, so that SSTs and manifests are written (and faulted).
    conf.put("spark.sql.streaming.stateStore.maintenanceInterval", "200ms");
    conf.put("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2");
    conf.put(StreamStateConf.SNAPSHOT_INTERVAL, "2");
    // Unreferenced (possibly torn) SSTs left by an injected crash become deletable after 1 s.
    conf.put(StreamStateConf.TORN_FILE_GRACE_MS, "1000");
    conf.put(StreamStateConf.LOCAL_DIR, workDir.resolve("streamstate-local").toString());
    conf.put(StreamStateConf.MEMORY_CAP_BYTES, String.valueOf(64L << 20));
    return conf;
  }

  static SparkSession start(String app, String master, Map<String, String> conf) {
    SparkSession.Builder builder = SparkSession.builder().master(master).appName(app);
    conf.forEach(builder::config);
    SparkSession spark = builder.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    TaskFaults.register(spark);
    return spark;
  }

  // ---- input ----

  /**
   * Writes the input of {@code batches} data batches under {@code dir}/left and right; the last one
   * also moves the watermark past every window, so that append mode emits them all.
   */
  public static void writeInput(Path dir, long seed, int batches) {
    Random r = new Random(seed);
    Map<Long, String> events = new HashMap<>();
    try {
      Files.createDirectories(dir.resolve("left"));
      Files.createDirectories(dir.resolve("right"));
      long id = 0;
      for (int b = 0; b < batches; b++) {
        List<String> left = new ArrayList<>();
        List<String> right = new ArrayList<>();
        long base = b * 20L;
        for (int i = 0; i < 14; i++) {
          long ts = base + r.nextInt(20);
          String key = "k" + r.nextInt(4);
          long eventId =
              r.nextInt(4) == 0 && id > 0 ? id - 1 - r.nextInt((int) Math.min(id, 3)) : id++;
          // A duplicate repeats an earlier event exactly (same id, key, time and value).
          left.add(leftJson(events, eventId, key, ts, r.nextInt(100)));
        }
        for (int i = 0; i < 12; i++) {
          right.add(rightJson("k" + r.nextInt(4), base + r.nextInt(20), r.nextInt(100)));
        }
        if (b == batches - 1) {
          // Moves the watermark past every window: the no-data batch that follows emits them.
          left.add(leftJson(events, 1_000_000, "flush", 10_000, 0));
          right.add(rightJson("flush", 10_000, 0));
        }
        writeBatchFile(dir.resolve("left"), b, left);
        writeBatchFile(dir.resolve("right"), b, right);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Copies the input directory {@code from} to {@code to} (file times too: they order files). */
  static Path copyInput(Path from, Path to) throws IOException {
    for (String side : List.of("left", "right")) {
      Files.createDirectories(to.resolve(side));
      try (Stream<Path> files = Files.list(from.resolve(side))) {
        for (Path f : files.toList()) {
          Files.copy(
              f, to.resolve(side).resolve(f.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
        }
      }
    }
    return to;
  }

  /**
   * Adds the drain file to {@code input} ({@link #writeDrainInput}) and runs the query on {@code
   * provider} on, without faults, until it has taken it.
   */
  static void drain(SparkSession spark, String provider, Path input, String checkpoint, Path output)
      throws Exception {
    writeDrainInput(input);
    runToEnd(spark, provider, input, checkpoint, output, NO_FAULTS, 0);
  }

  /**
   * Adds to {@code input} one more file per side, after all others: one event each, far past every
   * window of the input. It moves the watermark past all of them, so that a run that a restart kept
   * from its last no-data batch ({@link SparkLogs#lastBatchWatermarkMs}) emits the windows left; it
   * also closes the input's last window, so the output is compared to a reference run whose input
   * has this file too.
   */
  static void writeDrainInput(Path input) {
    try {
      for (String side : List.of("left", "right")) {
        Path dir = input.resolve(side);
        int next;
        try (Stream<Path> files = Files.list(dir)) {
          next = (int) files.count();
        }
        String event =
            side.equals("left")
                ? leftJson(new HashMap<>(), 2_000_000, "drain", 20_000, 0)
                : rightJson("drain", 20_000, 0);
        writeBatchFile(dir, next, List.of(event));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String leftJson(
      Map<Long, String> events, long id, String key, long ts, long value) {
    // Duplicates must repeat the whole event, as an at-least-once producer would.
    String event =
        events.computeIfAbsent(
            id,
            i ->
                String.format(
                    "{\"id\":%d,\"lkey\":\"%s\",\"lts\":\"%s\",\"lval\":%d}",
                    i, key, timestamp(ts), value));
    return event;
  }

  private static String rightJson(String key, long ts, long value) {
    return String.format("{\"rkey\":\"%s\",\"rts\":\"%s\",\"rval\":%d}", key, timestamp(ts), value);
  }

  private static String timestamp(long seconds) {
    return java.time.Instant.ofEpochSecond(seconds).toString();
  }

  static void writeBatchFile(Path dir, int batch, List<String> lines) throws IOException {
    Path file = dir.resolve(String.format("part-%05d.json", batch));
    Files.write(file, lines, StandardCharsets.UTF_8);
    // The file source takes files oldest first: make the order explicit.
    Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_000L + batch * 1000L));
  }

  // ---- query ----

  /** No fault schedule: {@link TaskFaults} points that never fire. */
  static final long NO_FAULTS = -1;

  /**
   * The query; with a {@code schedule} other than {@link #NO_FAULTS}, the {@link TaskFaults}
   * function of that schedule's plan at the join and after the aggregation.
   */
  static Dataset<Row> build(SparkSession spark, Path input, long schedule) {
    return build(spark, input, schedule, Shape.STANDARD);
  }

  /** The query as it is, or with its aggregation state changed (for schema-change tests). */
  enum Shape {
    STANDARD,
    /** The aggregation's grouping key {@code lkey} becomes the key's length (an int). */
    AGGREGATE_KEY_TYPE_CHANGED,
    /** The aggregation keeps one more value, the maximum {@code lval}. */
    AGGREGATE_VALUE_ADDED
  }

  static Dataset<Row> build(SparkSession spark, Path input, long schedule, Shape shape) {
    return build(spark, input, schedule, shape, UnaryOperator.identity());
  }

  /**
   * The query with {@code afterDedup} applied to the deduplicated left side: what it adds runs in
   * the deduplication's stage, before that stage's stores commit (they commit once their output is
   * consumed).
   */
  static Dataset<Row> build(
      SparkSession spark,
      Path input,
      long schedule,
      Shape shape,
      UnaryOperator<Dataset<Row>> afterDedup) {
    boolean faultPoints = schedule != NO_FAULTS;
    Dataset<Row> left =
        afterDedup.apply(
            spark
                .readStream()
                .schema(LEFT)
                .option("maxFilesPerTrigger", 1)
                .json(input.resolve("left").toString())
                .withWatermark("lts", "10 seconds")
                .dropDuplicates("id", "lts"));
    Dataset<Row> right =
        spark
            .readStream()
            .schema(RIGHT)
            .option("maxFilesPerTrigger", 1)
            .json(input.resolve("right").toString())
            .withWatermark("rts", "10 seconds");
    Dataset<Row> joined =
        left.join(
            right,
            expr(
                "lkey = rkey AND rts BETWEEN lts - INTERVAL 5 SECONDS"
                    + " AND lts + INTERVAL 5 SECONDS"));
    if (faultPoints) {
      joined =
          joined.withColumn(
              "lval",
              call_function(
                  TaskFaults.FUNCTION, lit(TaskFaults.SITE_JOIN), lit(schedule), col("lval")));
    }
    Column groupKey =
        shape == Shape.AGGREGATE_KEY_TYPE_CHANGED ? length(col("lkey")).as("lkey") : col("lkey");
    Column[] values =
        shape == Shape.AGGREGATE_VALUE_ADDED
            ? new Column[] {sum(expr("lval * 1000 + rval")).as("total"), max(col("lval"))}
            : new Column[] {sum(expr("lval * 1000 + rval")).as("total")};
    Dataset<Row> counted =
        joined
            .groupBy(window(col("lts"), "10 seconds"), groupKey)
            .agg(count(lit(1)).as("n"), values);
    if (faultPoints) {
      counted =
          counted.withColumn(
              "n",
              call_function(
                  TaskFaults.FUNCTION, lit(TaskFaults.SITE_AGGREGATE), lit(schedule), col("n")));
    }
    return counted.select(
        col("window.start").cast("long").as("start"), col("lkey"), col("n"), col("total"));
  }

  /** Starts the query writing batch files to {@code output}. */
  static StreamingQuery startQuery(
      SparkSession spark, Path input, String checkpoint, Path output, long schedule)
      throws java.util.concurrent.TimeoutException {
    return startQuery(spark, input, checkpoint, output, schedule, Shape.STANDARD);
  }

  static StreamingQuery startQuery(
      SparkSession spark, Path input, String checkpoint, Path output, long schedule, Shape shape)
      throws java.util.concurrent.TimeoutException {
    return startQuery(spark, input, checkpoint, output, build(spark, input, schedule, shape));
  }

  private static StreamingQuery startQuery(
      SparkSession spark, Path input, String checkpoint, Path output, Dataset<Row> query)
      throws java.util.concurrent.TimeoutException {
    return query
        .writeStream()
        .outputMode(OutputMode.Append())
        .option("checkpointLocation", checkpoint)
        .foreachBatch((VoidFunction2<Dataset<Row>, Long>) (ds, id) -> writeBatch(output, id, ds))
        .start();
  }

  /**
   * For the driver-kill test: the batch after whose sink write (its state committed, its commit log
   * entry not yet written) the driver writes {@link #holdMarker} and waits to be killed; -1: none.
   */
  static volatile long holdAfterSinkOfBatch = -1;

  static volatile Path holdMarker;

  /**
   * Called with the batch id after each sink write (the batch's state committed, its commit log
   * entry not yet written), in the driver; null: none. For tests that act on the storage mid-run
   * (fail a NameNode over, kill a DataNode).
   */
  static volatile java.util.function.LongConsumer afterSinkOfBatch;

  /** Writes {@link #holdMarker} and waits until the process is killed. */
  static void holdForKill(String where) {
    try {
      Files.writeString(holdMarker, where);
      Thread.sleep(Long.MAX_VALUE);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while waiting to be killed", e);
    }
  }

  private static void writeBatch(Path output, long batchId, Dataset<Row> ds) throws IOException {
    List<String> lines = new ArrayList<>();
    for (Row row : ds.collectAsList()) {
      lines.add(row.get(0) + "," + row.get(1) + "," + row.get(2) + "," + row.get(3));
    }
    lines.sort(null);
    Files.createDirectories(output);
    Path tmp = output.resolve(String.format(".batch-%05d.tmp", batchId));
    Files.write(tmp, lines, StandardCharsets.UTF_8);
    Files.move(
        tmp,
        output.resolve(String.format("batch-%05d.txt", batchId)),
        StandardCopyOption.REPLACE_EXISTING,
        StandardCopyOption.ATOMIC_MOVE);
    java.util.function.LongConsumer afterSink = afterSinkOfBatch;
    if (afterSink != null) {
      afterSink.accept(batchId);
    }
    if (batchId == holdAfterSinkOfBatch) {
      holdForKill("after the sink of batch " + batchId);
    }
  }

  /** How a run went: how often the query failed and was started again, and why. */
  record RunResult(int restarts, List<String> failures) {}

  /**
   * Runs the query on {@code provider} until all input is processed, starting it again after each
   * failure, at most {@code maxRestarts} times (then the last failure is thrown).
   */
  static RunResult runToEnd(
      SparkSession spark,
      String provider,
      Path input,
      String checkpoint,
      Path output,
      long schedule,
      int maxRestarts)
      throws Exception {
    return runToEnd(
        spark,
        provider,
        input,
        checkpoint,
        output,
        () -> build(spark, input, schedule),
        maxRestarts);
  }

  /** As {@link #runToEnd}, without faults, {@code afterDedup} applied as in {@link #build}. */
  static RunResult runToEnd(
      SparkSession spark,
      String provider,
      Path input,
      String checkpoint,
      Path output,
      UnaryOperator<Dataset<Row>> afterDedup,
      int maxRestarts)
      throws Exception {
    return runToEnd(
        spark,
        provider,
        input,
        checkpoint,
        output,
        () -> build(spark, input, NO_FAULTS, Shape.STANDARD, afterDedup),
        maxRestarts);
  }

  private static RunResult runToEnd(
      SparkSession spark,
      String provider,
      Path input,
      String checkpoint,
      Path output,
      Supplier<Dataset<Row>> query,
      int maxRestarts)
      throws Exception {
    spark.conf().set(PROVIDER_CLASS, provider);
    List<String> failures = new ArrayList<>();
    for (int restarts = 0; ; restarts++) {
      StreamingQuery running = null;
      try {
        // A fault may also hit the start (reading the checkpoint's logs and metadata).
        running = startQuery(spark, input, checkpoint, output, query.get());
        running.processAllAvailable();
        running.stop();
        return new RunResult(restarts, failures);
      } catch (Exception e) {
        if (running != null) {
          running.stop();
        }
        failures.add(rootMessage(e));
        if (restarts >= maxRestarts) {
          throw new AssertionError(
              "Query still failing after " + restarts + " restarts; failures: " + failures, e);
        }
      }
    }
  }

  /**
   * Runs the query on {@code provider} once, until all input is processed or it fails; returns the
   * failure, if any.
   */
  static java.util.Optional<Exception> runOnce(
      SparkSession spark, String provider, Path input, String checkpoint, Path output)
      throws Exception {
    return runOnce(spark, provider, input, checkpoint, output, Shape.STANDARD);
  }

  static java.util.Optional<Exception> runOnce(
      SparkSession spark, String provider, Path input, String checkpoint, Path output, Shape shape)
      throws Exception {
    spark.conf().set(PROVIDER_CLASS, provider);
    StreamingQuery query;
    try {
      query = startQuery(spark, input, checkpoint, output, NO_FAULTS, shape);
    } catch (Exception e) {
      return java.util.Optional.of(e); // refused at start (analysis, checkpoint file manager)
    }
    try {
      query.processAllAvailable();
      return java.util.Optional.empty();
    } catch (Exception e) {
      if (!(e instanceof StreamingQueryException)) {
        throw e;
      }
      return java.util.Optional.of(e);
    } finally {
      query.stop();
    }
  }

  /** The stack trace of {@code e} with all its causes, as text. */
  static String fullText(Throwable e) {
    java.io.StringWriter text = new java.io.StringWriter();
    e.printStackTrace(new java.io.PrintWriter(text));
    return text.toString();
  }

  /** The innermost message of {@code e}'s causes (first line). */
  static String rootMessage(Throwable e) {
    Throwable t = e;
    while (t.getCause() != null && t.getCause() != t) {
      t = t.getCause();
    }
    String m = t.getClass().getSimpleName() + ": " + t.getMessage();
    int nl = m.indexOf('\n');
    return nl < 0 ? m : m.substring(0, nl);
  }

  /** Every output row, sorted (rows of batches run again are there once: files are replaced). */
  public static List<String> readOutput(Path output) {
    List<String> rows = new ArrayList<>();
    if (!Files.isDirectory(output)) {
      return rows;
    }
    try (Stream<Path> files = Files.list(output)) {
      for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".txt")).toList()) {
        rows.addAll(Files.readAllLines(f, StandardCharsets.UTF_8));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    rows.sort(null);
    return rows;
  }

  /** Rows of {@code reference} missing from {@code actual}, and rows {@code actual} has extra. */
  record Difference(List<String> lost, List<String> doubled) {
    static Difference of(List<String> reference, List<String> actual) {
      Map<String, Integer> counts = new HashMap<>();
      reference.forEach(r -> counts.merge(r, 1, Integer::sum));
      actual.forEach(r -> counts.merge(r, -1, Integer::sum));
      List<String> lost = new ArrayList<>();
      List<String> doubled = new ArrayList<>();
      counts.forEach(
          (row, n) -> {
            for (int i = 0; i < Math.abs(n); i++) {
              (n > 0 ? lost : doubled).add(row);
            }
          });
      lost.sort(null);
      doubled.sort(null);
      return new Difference(lost, doubled);
    }

    boolean none() {
      return lost.isEmpty() && doubled.isEmpty();
    }
  }
}
