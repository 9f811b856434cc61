package io.streamstate.spark;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.types.StructType;

/**
 * The calls into Spark that differ between lines, for Spark 3.5 (the 4.x versions are in {@code
 * src/line-4.0} and {@code src/line-4.1+}; docs/spark-lines.md, sections 1-3).
 */
final class SparkLineApi {
  private SparkLineApi() {}

  /**
   * Spark 3.5 passes no run id to providers (it has no {@code StreamExecution.RUN_ID_KEY}); the
   * provider needs it only for coordinator reports, which 3.5 has none of.
   */
  static String runId(Configuration hadoopConf) {
    return null;
  }

  /** Spark's metrics object: 3.5 has no instance metrics, so the snapshot version is not sent. */
  static StateStoreMetrics metrics(
      long numKeys,
      long memoryUsedBytes,
      Map<StateStoreCustomMetric, Object> custom,
      StateStoreId id,
      long lastSnapshotVersion) {
    return new StateStoreMetrics(numKeys, memoryUsedBytes, ScalaInterop.map(custom));
  }

  /** Spark 3.5 has no commit validation through the coordinator. */
  static void reportCommit(
      StateStoreConf storeConf, long version, StateStoreId id, Configuration hadoopConf) {}

  /** Spark's row format check (3.5: without the store id). */
  static void validateStateRowFormat(
      UnsafeRow key,
      StructType keySchema,
      UnsafeRow value,
      StructType valueSchema,
      StateStoreId id,
      StateStoreConf storeConf) {
    StateStoreProvider$.MODULE$.validateStateRowFormat(
        key, keySchema, value, valueSchema, storeConf);
  }

  /** Spark 3.5's coordinator takes no snapshot reports. */
  static void reportSnapshotUploaded(StateStoreProviderId providerId, long version) {}
}
