package io.streamstate.spark;

import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import scala.collection.immutable.Seq;

/**
 * The members of Spark's {@code StateStoreProvider} that only some lines declare, for Spark 4.1 and
 * later: {@link StreamStateProvider} extends it, so that its own source is the same on every 4.x
 * line (the 4.0 module has an empty one).
 */
abstract class SparkLineProvider {
  public Seq<StateStoreInstanceMetric> supportedInstanceMetrics() {
    return SparkLineApi.instanceMetrics();
  }
}
