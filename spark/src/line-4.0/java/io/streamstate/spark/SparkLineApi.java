package io.streamstate.spark;

import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.types.StructType;

/**
 * The calls into Spark that differ between lines, for Spark 4.0 (the 4.1+ version is in the spark
 * module's {@code line-4.1+} sources; docs/spark-lines.md, sections 1-3 and 8).
 */
final class SparkLineApi {
  private SparkLineApi() {}

  /** The query's run id, which Spark passes in the Hadoop configuration; null if absent. */
  static String runId(Configuration hadoopConf) {
    return hadoopConf.get(StreamExecution.RUN_ID_KEY());
  }

  /** Spark's metrics object: 4.0 has no instance metrics, so the snapshot version is not sent. */
  static StateStoreMetrics metrics(
      long numKeys,
      long memoryUsedBytes,
      Map<StateStoreCustomMetric, Object> custom,
      StateStoreId id,
      long lastSnapshotVersion) {
    return new StateStoreMetrics(numKeys, memoryUsedBytes, ScalaInterop.map(custom));
  }

  /** Spark 4.0 has no commit validation through the coordinator. */
  static void reportCommit(
      StateStoreConf storeConf, long version, StateStoreId id, Configuration hadoopConf) {}

  /** Spark's row format check (4.0: without the store id). */
  static void validateStateRowFormat(
      UnsafeRow key,
      StructType keySchema,
      UnsafeRow value,
      StructType valueSchema,
      StateStoreId id,
      StateStoreConf storeConf) {
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, storeConf);
  }

  /** Spark 4.0's coordinator takes no snapshot reports. */
  static void reportSnapshotUploaded(StateStoreProviderId providerId, long version) {}
}
