package io.streamstate.bench.dstream;

import io.streamstate.core.ProcessResources;
import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.state.BatchMarker;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.scheduler.BatchInfo;
import org.apache.spark.util.ManualClock;

/**
 * One run of one implementation: a fresh application driven batch by batch on Spark's {@link
 * ManualClock} (the clock advances one interval, then waits for that batch to complete, so no batch
 * queues behind another), then a stop and a restart (recovery) in a new Spark context.
 *
 * <p>A batch's time is the wall time from advancing the clock to its {@code onBatchCompleted}: it
 * includes job generation, where ours runs its state job (Spark's {@code processingDelay} would
 * miss it), and Spark's checkpoint of the state RDD, which runs inside the batch's job.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
final class CellRunner {
  private static final long BATCH_TIMEOUT_S = 900;

  /** A batch of the steady phase. */
  record BatchRow(
      Implementation.Cell cell,
      int ordinal,
      String phase,
      double wallMs,
      long processingMs,
      long bytesWritten) {}

  /** The recovery of a run, and the state directory's size when it stopped. */
  record RecoveryRow(
      Implementation.Cell cell,
      double contextMs,
      double startToFirstMs,
      double totalMs,
      long stateBytes,
      String check) {}

  final List<BatchRow> batches = new ArrayList<>();
  RecoveryRow recovery;

  void run(Implementation.Cell cell) throws InterruptedException {
    Implementation impl = cell.implementation();
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("MapWithStateBenchmark-" + impl.label())
            .set("spark.ui.enabled", "false")
            .set("spark.serializer", cell.serializerClass())
            .set("spark.streaming.clock", ManualClock.class.getName())
            .set("spark.local.dir", cell.dir().resolve("spark-local").toString());
    DirectoryWrites writes = new DirectoryWrites(cell.stateDir());

    JavaStreamingContext ssc = impl.create(conf, cell, 0);
    BatchCompletions completions = new BatchCompletions();
    ssc.ssc().addStreamingListener(completions);
    long stateBytes;
    try {
      ssc.start();
      ManualClock clock = (ManualClock) ssc.ssc().scheduler().clock();
      writes.sinceLastWalk(); // whatever start-up wrote is nobody's batch
      for (int ordinal = 1; ordinal <= cell.steadyBatches(); ordinal++) {
        long t0 = System.nanoTime();
        clock.advance(cell.batchMs());
        BatchInfo info = completions.next(BATCH_TIMEOUT_S);
        double wallMs = (System.nanoTime() - t0) / 1e6;
        long bytes = writes.sinceLastWalk();
        String phase =
            ordinal <= cell.loadBatches()
                ? "load"
                : ordinal <= cell.loadBatches() + cell.unmeasuredBatches()
                    ? "unmeasured"
                    : "measured";
        long processing =
            info.processingDelay().isDefined() ? (Long) info.processingDelay().get() : -1;
        batches.add(new BatchRow(cell, ordinal, phase, wallMs, processing, bytes));
        System.out.printf(
            "  %s r%d %,d keys batch %d (%s): %.0f ms, %.2f MB written%n",
            impl.label(), cell.round(), cell.keys(), ordinal, phase, wallMs, bytes / 1e6);
      }
    } finally {
      ssc.stop(true, false); // waits for Spark's last metadata checkpoint to be written
    }
    stateBytes = writes.totalBytes();
    // A new process: our executor's open stores die with the old one (recovery loads from storage).
    ProcessResources.restartForTests(true);

    long t0 = System.nanoTime();
    JavaStreamingContext resumed = impl.resume(conf, cell, cell.steadyBatches());
    BatchCompletions afterRestart = new BatchCompletions();
    resumed.ssc().addStreamingListener(afterRestart);
    double contextMs = (System.nanoTime() - t0) / 1e6;
    String check;
    try {
      long t1 = System.nanoTime();
      resumed.start();
      // Ours runs the next batch when the clock says so; Spark re-runs the batch of its last
      // checkpoint at start by itself (and would then run this one): the first to complete counts.
      ((ManualClock) resumed.ssc().scheduler().clock()).advance(cell.batchMs());
      afterRestart.next(BATCH_TIMEOUT_S);
      long t2 = System.nanoTime();
      check = "-";
      if (impl == Implementation.OURS) {
        Optional<BatchMarker> marker =
            StreamStateDStreams.lastCompletedBatch(
                StreamStateDStreams.Options.at(cell.stateDir().toUri()).name("sums"));
        long expected = cell.steadyBatches() + 1L;
        check =
            marker.isPresent() && marker.get().version() == expected
                ? "version " + expected
                : "UNEXPECTED marker " + marker + ", expected version " + expected;
      }
      recovery =
          new RecoveryRow(cell, contextMs, (t2 - t1) / 1e6, (t2 - t0) / 1e6, stateBytes, check);
      System.out.printf(
          "  %s r%d %,d keys recovery: %.0f ms (context %.0f ms), %s%n",
          impl.label(), cell.round(), cell.keys(), recovery.totalMs(), contextMs, check);
    } finally {
      resumed.stop(true, false);
      ProcessResources.restartForTests(true);
    }
  }
}
