package io.streamstate.examples;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;
import static org.apache.spark.sql.functions.round;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.timestamp_millis;
import static org.apache.spark.sql.functions.window;

import io.streamstate.spark.StreamStateProvider;
import java.io.IOException;
import java.nio.file.Paths;
import java.time.Instant;
import java.util.Arrays;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.apache.spark.sql.streaming.Trigger;

/**
 * Revenue per shop per minute, with state in streamstate.
 *
 * <p>Order events come from Spark's {@code rate-micro-batch} source, which is deterministic: batch
 * {@code n} always holds orders {@code n * 400} to {@code n * 400 + 399}, and each order's shop,
 * amount and event time are functions of its number (event time advances 30 s per batch, so a few
 * batches close a 1-minute window). The query groups them into 1-minute event-time windows with a
 * 1-minute watermark and appends each closed window's revenue and order count per shop to Parquet.
 *
 * <p>Each run stops by itself after a number of batches or seconds. A second run on the same
 * directory resumes from the checkpoint: state comes back from streamstate's durable files.
 *
 * <pre>
 * OrderRevenueDemo [--fresh] [dir (default target/demo)] [batches (15)] [seconds (60)]
 * </pre>
 */
public final class OrderRevenueDemo {
  private static final long ORDERS_PER_BATCH = 400;
  private static final long EVENT_MS_PER_BATCH = 30_000;
  private static final long EVENT_MS_PER_ORDER = EVENT_MS_PER_BATCH / ORDERS_PER_BATCH;
  private static final long EVENT_TIME_START = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  private OrderRevenueDemo() {}

  private static final String PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass";

  public static void main(String[] args) throws Exception {
    int i = 0;
    boolean fresh = args.length > 0 && args[0].equals("--fresh");
    if (fresh) {
      i++;
    }
    // A local path, or any URI Hadoop serves (hdfs://, s3a://) on a cluster.
    String location = args.length > i ? args[i] : "target/demo";
    int maxBatches = args.length > i + 1 ? Integer.parseInt(args[i + 1]) : 15;
    int maxSeconds = args.length > i + 2 ? Integer.parseInt(args[i + 2]) : 60;

    // Under spark-submit (docs/getting-started.md) the master and our two settings come from the
    // command line and spark-defaults.conf, which Spark passes as system properties; run by Maven
    // (the README's demo command), the demo sets them itself.
    boolean submitted = System.getProperty("spark.master") != null;
    SparkSession.Builder builder = SparkSession.builder().appName("OrderRevenueDemo");
    if (!submitted) {
      builder
          .master("local[2]")
          .config("spark.ui.enabled", "false")
          .config("spark.driver.host", "127.0.0.1")
          .config("spark.driver.bindAddress", "127.0.0.1")
          .config(PROVIDER_KEY, StreamStateProvider.class.getName())
          // Ours for Spark's offset and commit logs too: no rename, and on a local disk no
          // process forked per file (Spark's default does that without Hadoop's native library).
          .config(
              "spark.sql.streaming.checkpointFileManagerClass",
              "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager");
    }
    SparkSession spark =
        builder
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.sql.shuffle.partitions", "4")
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "5s")
            .config("spark.sql.adaptive.enabled", "false")
            .getOrCreate();
    Path given =
        location.contains("://")
            ? new Path(location)
            : new Path(Paths.get(location).toAbsolutePath().toUri());
    FileSystem fs = given.getFileSystem(spark.sparkContext().hadoopConfiguration());
    Path dir = fs.makeQualified(given);
    Path checkpoint = new Path(dir, "checkpoint");
    Path state = new Path(checkpoint, "state");
    Path output = new Path(dir, "revenue");
    if (fresh) {
      fs.delete(dir, true);
    }
    OptionalLong lastCommitted = lastCommittedBatch(fs, checkpoint);
    if (lastCommitted.isPresent()) {
      System.out.printf(
          "resuming from checkpoint at batch %d (last committed batch; state from %s)%n",
          lastCommitted.getAsLong(), state);
    } else {
      System.out.printf("starting with a fresh checkpoint at %s%n", checkpoint);
    }

    String provider = spark.conf().get(PROVIDER_KEY, "(Spark's default)");
    if (!provider.equals(StreamStateProvider.class.getName())) {
      System.err.printf(
          "%s is %s, not %s: add the settings of docs/getting-started.md, section 2%n",
          PROVIDER_KEY, provider, StreamStateProvider.class.getName());
      spark.stop();
      System.exit(2);
    }
    spark.sparkContext().setLogLevel("WARN");

    CountDownLatch batchesLeft = new CountDownLatch(maxBatches);
    ProgressPrinter printer = new ProgressPrinter(batchesLeft);
    spark.streams().addListener(printer);

    Dataset<Row> orders =
        spark
            .readStream()
            .format("rate-micro-batch")
            .option("rowsPerBatch", ORDERS_PER_BATCH)
            .option("numPartitions", 2)
            .load()
            .select(
                col("value").as("order_id"),
                concat(lit("shop-"), pmod(col("value").multiply(7), lit(5))).as("shop"),
                pmod(col("value").multiply(7919), lit(5000)).divide(100).plus(1).as("amount"),
                timestamp_millis(col("value").multiply(EVENT_MS_PER_ORDER).plus(EVENT_TIME_START))
                    .as("event_time"));

    Dataset<Row> revenue =
        orders
            .withWatermark("event_time", "1 minute")
            .groupBy(window(col("event_time"), "1 minute"), col("shop"))
            .agg(round(sum("amount"), 2).as("revenue"), count(lit(1)).as("orders"))
            .select(
                col("window.start").as("window_start"),
                col("window.end").as("window_end"),
                col("shop"),
                col("revenue"),
                col("orders"));

    StreamingQuery query =
        revenue
            .writeStream()
            .queryName("order-revenue")
            .format("parquet")
            .option("path", output.toString())
            .option("checkpointLocation", checkpoint.toString())
            .outputMode(OutputMode.Append())
            .trigger(Trigger.ProcessingTime("1 second"))
            .start();
    boolean enoughBatches = batchesLeft.await(maxSeconds, TimeUnit.SECONDS);
    // Stop between two batches rather than interrupt one (which Spark logs as an error).
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (query.status().isTriggerActive() && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    query.stop();
    System.out.printf(
        "stopped after %d batches of this run (%s reached; a running batch is let finish)%n",
        printer.batches(),
        enoughBatches ? "target of " + maxBatches + " batches" : "limit of " + maxSeconds + " s");
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }

    Dataset<Row> written = spark.read().parquet(output.toString());
    Row totals = written.agg(count(lit(1)), sum("orders"), round(sum("revenue"), 2)).first();
    System.out.printf(
        "Parquet at %s: %d rows (closed shop-minutes), %d orders, revenue %s%n",
        output, totals.getLong(0), totals.isNullAt(1) ? 0 : totals.getLong(1), totals.get(2));
    written.orderBy(col("window_start").desc(), col("shop")).show(5, false);
    System.out.printf("streamstate files under %s: %d%n", state, countFiles(fs, state));
    spark.stop();
  }

  /** Prints one line per batch: duration, streamstate commit latency, rows. */
  private static final class ProgressPrinter extends StreamingQueryListener {
    private final CountDownLatch batchesLeft;
    private final AtomicInteger batches = new AtomicInteger();

    ProgressPrinter(CountDownLatch batchesLeft) {
      this.batchesLeft = batchesLeft;
    }

    int batches() {
      return batches.get();
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      StreamingQueryProgress p = event.progress();
      batches.incrementAndGet();
      Map<String, Long> durations = p.durationMs();
      long duration = durations.getOrDefault("triggerExecution", 0L);
      String state = "no state operator";
      long closedWindows = 0;
      if (p.stateOperators().length > 0) {
        StateOperatorProgress op = p.stateOperators()[0];
        Map<String, Long> m = op.customMetrics();
        state =
            String.format(
                "state commit %d ms (streamstate, sum of %d partitions), %d state rows,"
                    + " loads warm/durable %d/%d",
                m.getOrDefault("streamstateCommitLatencyMs", -1L),
                op.numShufflePartitions(),
                op.numRowsTotal(),
                m.getOrDefault("streamstateWarmLoads", 0L),
                m.getOrDefault("streamstateDurableLoads", 0L));
        // Append mode: a window leaves the state exactly when it is written out.
        closedWindows = op.numRowsRemoved();
      }
      System.out.printf(
          "batch %3d: %5d ms, %s, %d input rows, %d rows to Parquet%n",
          p.batchId(), duration, state, p.numInputRows(), closedWindows);
      batchesLeft.countDown();
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
  }

  /** The newest batch id in {@code <checkpoint>/commits}, if any. */
  private static OptionalLong lastCommittedBatch(FileSystem fs, Path checkpoint)
      throws IOException {
    Path commits = new Path(checkpoint, "commits");
    if (!fs.exists(commits)) {
      return OptionalLong.empty();
    }
    return Arrays.stream(fs.listStatus(commits))
        .map(f -> f.getPath().getName())
        .filter(n -> n.matches("\\d+"))
        .mapToLong(Long::parseLong)
        .max();
  }

  private static long countFiles(FileSystem fs, Path dir) throws IOException {
    if (!fs.exists(dir)) {
      return 0;
    }
    long n = 0;
    for (RemoteIterator<LocatedFileStatus> files = fs.listFiles(dir, true); files.hasNext(); ) {
      files.next();
      n++;
    }
    return n;
  }
}
