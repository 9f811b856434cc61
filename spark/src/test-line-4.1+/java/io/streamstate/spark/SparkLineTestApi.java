package io.streamstate.spark;

import java.util.UUID;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef;

/**
 * What the tests call in Spark that differs between lines, for Spark 4.1 and later (the 4.0 module
 * has its own): docs/spark-lines.md.
 */
final class SparkLineTestApi {
  private SparkLineTestApi() {}

  static <A> MemoryStream<A> memoryStream(Encoder<A> encoder, SparkSession spark) {
    return MemoryStream.apply(encoder, spark);
  }

  /** Whether the coordinator counts no store of the run as lagging on snapshots. */
  static boolean noLaggingStores(UUID runId, long latestVersion) {
    return StateStoreCoordinatorRef.forExecutor(SparkEnv.get())
        .getLaggingStoresForTesting(runId, latestVersion, true)
        .isEmpty();
  }
}
