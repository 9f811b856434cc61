package io.streamstate.spark;

import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import scala.collection.immutable.Seq;

/**
 * What the 4.x {@link StreamStateProvider} adds on Spark 4.1 and later: the instance metrics (the
 * 4.0 version, in {@code src/line-4.0}, adds nothing), so that the 4.x provider's own source is the
 * same on every 4.x line.
 */
abstract class SparkLineProvider extends StreamStateProviderBase {
  public Seq<StateStoreInstanceMetric> supportedInstanceMetrics() {
    return SparkLineApi.instanceMetrics();
  }
}
