package io.streamstate.dstream.wal;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaReceiverInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;

/**
 * The driver of {@link ReceiverWalKillIT}, run in a JVM of its own (killed with SIGKILL, then
 * started again): {@code StreamingContext.getOrCreate} on the checkpoint, an {@link AckingReceiver}
 * stream with the receiver write-ahead log on, both logs ours, each batch's ids written to {@code
 * <out>/<batch time>} (atomically, overwriting: idempotent per batch time). Stops gracefully when
 * the stop file appears.
 *
 * <p>Arguments: {@code <checkpoint URI> <WAL URI> <out dir> <ack file> <stop file> [spark.k=v
 * ...]}; the run number comes as the system property {@value AckingReceiver#RUN_PROPERTY}.
 */
public final class ReceiverWalDriver {
  /** The time of the last batch written, in this JVM. */
  private static final java.util.concurrent.atomic.AtomicLong LAST_BATCH =
      new java.util.concurrent.atomic.AtomicLong();

  private ReceiverWalDriver() {}

  public static void main(String[] args) throws Exception {
    String checkpoint = args[0];
    String wal = args[1];
    String out = args[2];
    String ackFile = args[3];
    Path stopFile = Path.of(args[4]);
    Map<String, String> extra = new LinkedHashMap<>();
    for (int i = 5; i < args.length; i++) {
      int eq = args[i].indexOf('=');
      extra.put(args[i].substring(0, eq), args[i].substring(eq + 1));
    }
    Configuration hadoop = new Configuration();
    extra.forEach(
        (k, v) -> {
          if (k.startsWith("spark.hadoop.")) {
            hadoop.set(k.substring("spark.hadoop.".length()), v);
          }
        });
    long t0 = System.nanoTime();
    boolean[] created = {false};
    JavaStreamingContext ssc =
        JavaStreamingContext.getOrCreate(
            checkpoint,
            () -> {
              created[0] = true;
              return create(checkpoint, wal, out, ackFile, extra);
            },
            hadoop);
    ssc.sparkContext().setLogLevel("WARN");
    System.out.println(
        "DRIVER run "
            + System.getProperty(AckingReceiver.RUN_PROPERTY)
            + ": "
            + (created[0] ? "new context" : "recovered from " + checkpoint));
    long t1 = System.nanoTime();
    ssc.start();
    // Recovery reads the driver's log (ReceivedBlockTracker) in start.
    System.out.printf(
        "DRIVER timing: getOrCreate %d ms, start %d ms%n",
        (t1 - t0) / 1_000_000, (System.nanoTime() - t1) / 1_000_000);
    while (!Files.exists(stopFile)) {
      if (ssc.awaitTerminationOrTimeout(100)) {
        System.out.println("DRIVER terminated without a stop request");
        System.exit(2);
      }
    }
    // Spark's graceful stop closes the driver's log (ReceivedBlockTracker.stop, after the receivers
    // stopped) while the job generator still allocates the blocks received last: with Spark's
    // BatchedWriteAheadLog around any driver log, blocks added within the last batch interval are
    // then not processed in this run (they stay in the log for the next start). So the receiver
    // stops storing first, and the batches after it are awaited before the stop.
    if (!AckingReceiver.drain()) {
      System.out.println("DRIVER the receiver did not drain within 30 s");
      System.exit(3);
    }
    long drainedAt = System.currentTimeMillis();
    long deadline = drainedAt + 60_000;
    while (LAST_BATCH.get() < drainedAt + 1_500 && System.currentTimeMillis() < deadline) {
      Thread.sleep(50);
    }
    ssc.stop(true, true);
    System.out.println("DRIVER stopped gracefully");
    System.exit(0);
  }

  private static JavaStreamingContext create(
      String checkpoint, String wal, String out, String ackFile, Map<String, String> extra) {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("ReceiverWalKillIT")
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.streaming.receiver.writeAheadLog.enable", "true")
            .set(
                "spark.streaming.receiver.writeAheadLog.class",
                StreamStateReceiverWriteAheadLog.class.getName())
            .set(
                "spark.streaming.driver.writeAheadLog.class",
                StreamStateDriverWriteAheadLog.class.getName())
            .set(WalSettings.DIR, wal);
    extra.forEach(conf::set);
    JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.milliseconds(500));
    ssc.checkpoint(checkpoint);
    // Keep every received block for the run: the test checks our log's files afterwards, which
    // Spark's cleanup (blocks older than the remember duration) would otherwise race.
    ssc.remember(Durations.minutes(10));
    JavaReceiverInputDStream<Long> ids = ssc.receiverStream(new AckingReceiver(ackFile));
    ids.foreachRDD(
        (rdd, time) -> {
          List<Long> batch = new ArrayList<>(rdd.collect());
          writeBatch(Path.of(out), time.milliseconds(), batch);
        });
    return ssc;
  }

  /** {@code <out>/<time>}: one id a line, written to a temporary name and moved over. */
  static void writeBatch(Path out, long time, List<Long> ids) {
    StringBuilder lines = new StringBuilder();
    ids.forEach(id -> lines.append(id).append('\n'));
    try {
      Path tmp = out.resolve("." + time + ".tmp");
      Files.writeString(tmp, lines, StandardCharsets.US_ASCII);
      Files.move(
          tmp,
          out.resolve(String.format("%015d", time)),
          StandardCopyOption.ATOMIC_MOVE,
          StandardCopyOption.REPLACE_EXISTING);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    LAST_BATCH.accumulateAndGet(time, Math::max);
  }
}
