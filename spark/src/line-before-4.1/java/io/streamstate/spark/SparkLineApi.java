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
 * The calls into Spark that differ between lines, for Spark 3.5 and 4.0 (the 4.1+ version is in
 * {@code src/line-4.1+}; docs/spark-lines.md, sections 1-3): neither line has instance metrics,
 * commit validation or snapshot reports through the coordinator, and both check row formats without
 * the store id.
 */
final class SparkLineApi {
  private SparkLineApi() {}

  /**
   * Not read: the provider needs the query's run id only for coordinator reports, which these lines
   * have none of (3.5 does not even pass it).
   */
  static String runId(Configuration hadoopConf) {
    return null;
  }

  /**
   * Spark's metrics object: these lines have no instance metrics, so the snapshot version is not
   * sent.
   */
  static StateStoreMetrics metrics(
      long numKeys,
      long memoryUsedBytes,
      Map<StateStoreCustomMetric, Object> custom,
      StateStoreId id,
      long lastSnapshotVersion) {
    return new StateStoreMetrics(numKeys, memoryUsedBytes, ScalaInterop.map(custom));
  }

  /** No commit validation through the coordinator before 4.1. */
  static void reportCommit(
      StateStoreConf storeConf, long version, StateStoreId id, Configuration hadoopConf) {}

  /** Spark's row format check (without the store id before 4.1). */
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

  /** The coordinator takes no snapshot reports before 4.1. */
  static void reportSnapshotUploaded(StateStoreProviderId providerId, long version) {}
}
