package io.streamstate.spark.reliability;

import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;

/**
 * The driver of the reliability query in a JVM of its own, for tests that kill it. Arguments:
 * {@code <provider class> <input dir> <checkpoint URI> <output dir> <work dir> <hold> <marker>},
 * where {@code hold} is {@code none}, {@code sink:<batch>} (wait to be killed after the sink of
 * that batch: its state committed, its commit log entry not written) or {@code join:<batch>} (wait
 * inside a join task of that batch, before its state commits), and {@code marker} is the file
 * written when it waits. Runs the query to the end of its input, starting it again after a failure
 * at most 3 times, prints {@code DRIVER DONE restarts=<n>} and exits 0.
 */
public final class ReliabilityDriverMain {
  /** A schedule id with fault points in the query (for the join hold) but no plan: no faults. */
  private static final long NO_PLAN_INSTALLED = 0;

  private ReliabilityDriverMain() {}

  public static void main(String[] args) throws Exception {
    String provider = args[0];
    Path input = Path.of(args[1]);
    String checkpoint = args[2];
    Path output = Path.of(args[3]);
    Path work = Path.of(args[4]);
    String hold = args[5];
    ReliabilityQuery.holdMarker = Path.of(args[6]);
    if (hold.startsWith("sink:")) {
      ReliabilityQuery.holdAfterSinkOfBatch = Long.parseLong(hold.substring(5));
    } else if (hold.startsWith("join:")) {
      TaskFaults.holdInJoinOfBatch = Long.parseLong(hold.substring(5));
    }
    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    SparkSession spark = ReliabilityQuery.start("ReliabilityDriverMain", "local[2]", conf);
    int exit = 0;
    try {
      ReliabilityQuery.RunResult run =
          ReliabilityQuery.runToEnd(
              spark, provider, input, checkpoint, output, NO_PLAN_INSTALLED, 3);
      System.out.println("DRIVER DONE restarts=" + run.restarts() + " failures=" + run.failures());
    } catch (Throwable t) {
      System.out.println("DRIVER FAILED " + t);
      t.printStackTrace(System.out);
      exit = 1;
    } finally {
      spark.stop();
    }
    System.exit(exit);
  }
}
