package io.streamstate.spark.reliability;

import java.nio.file.Path;
import org.apache.spark.sql.SparkSession;

/**
 * The driver of a hedged file-sink query in a JVM of its own, for the test that kills it.
 * Arguments: {@code <query> <input dir> <checkpoint> <output URI> <work dir> <hold> <marker>},
 * where {@code query} names a {@link SinkQueries.Query}, and {@code hold} is {@code
 * before-manifest:<batch>} or {@code after-manifest:<batch>} ({@link HoldingFileCommitProtocol}).
 * Runs the query on the visible input once, prints {@code DRIVER DONE} and exits 0, unless it
 * reaches the hold and is killed there.
 */
public final class HedgedFileSinkDriverMain {
  private HedgedFileSinkDriverMain() {}

  public static void main(String[] args) throws Exception {
    SinkQueries.Query query = SinkQueries.Query.valueOf(args[0]);
    Path input = Path.of(args[1]);
    String checkpoint = args[2];
    String output = args[3];
    Path work = Path.of(args[4]);
    String hold = args[5];
    ReliabilityQuery.holdMarker = Path.of(args[6]);
    long batch = Long.parseLong(hold.substring(hold.indexOf(':') + 1));
    if (hold.startsWith("before-manifest:")) {
      HoldingFileCommitProtocol.holdBeforeManifestOfBatch = batch;
    } else if (hold.startsWith("after-manifest:")) {
      HoldingFileCommitProtocol.holdAfterManifestOfBatch = batch;
    } else {
      throw new IllegalArgumentException("Unknown hold " + hold);
    }
    SparkSession spark =
        ReliabilityQuery.start(
            "HedgedFileSinkDriverMain", "local[2]", SinkQueries.sessionConf(work));
    int exit = 0;
    try {
      SinkQueries.useHedged(spark, HoldingFileCommitProtocol.class.getName());
      SinkQueries.runOnce(spark, query, input, checkpoint, output);
      System.out.println("DRIVER DONE");
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
