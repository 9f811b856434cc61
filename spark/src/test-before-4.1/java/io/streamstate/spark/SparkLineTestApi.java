package io.streamstate.spark;

import java.util.UUID;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.MemoryStream;

/**
 * What the tests call in Spark that differs between lines, for Spark 3.5 and 4.0 (the 4.1+ version
 * is in {@code src/test-line-4.1+}).
 */
final class SparkLineTestApi {
  private SparkLineTestApi() {}

  static <A> MemoryStream<A> memoryStream(Encoder<A> encoder, SparkSession spark) {
    return MemoryStream.apply(encoder, spark.sqlContext());
  }

  /** Spark 3.5's and 4.0's coordinators track no snapshot lag: no store is counted as lagging. */
  static boolean noLaggingStores(UUID runId, long latestVersion) {
    return true;
  }
}
