package io.streamstate.spark;

import java.util.UUID;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.MemoryStream;

/**
 * What the tests call in Spark that differs between lines, for Spark 4.0 (the 4.1+ version is in
 * the spark module's {@code test-since-4.1} sources).
 */
final class SparkLineTestApi {
  private SparkLineTestApi() {}

  static <A> MemoryStream<A> memoryStream(Encoder<A> encoder, SparkSession spark) {
    return MemoryStream.apply(encoder, spark.sqlContext());
  }

  /** Spark 4.0's coordinator tracks no snapshot lag: no store is ever counted as lagging. */
  static boolean noLaggingStores(UUID runId, long latestVersion) {
    return true;
  }
}
