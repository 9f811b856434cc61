package io.streamstate.spark;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCoordinatorRef;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreInstanceMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreMetrics;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider$;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.apache.spark.sql.execution.streaming.state.StateStoreSnapshotLastUploadInstanceMetric;
import org.apache.spark.sql.types.StructType;
import scala.Option;
import scala.collection.immutable.Seq;

/**
 * The calls into Spark that differ between lines, for Spark 4.1 and later (this source is compiled
 * in the 4.1 and 4.2 modules; the 4.0 module has its own). Everything else in the adapter is
 * written once for every 4.x line (docs/spark-lines.md, "One source, compiled per line").
 */
final class SparkLineApi {
  /** Spark's own per-partition "last uploaded snapshot version" instance metric. */
  static final StateStoreSnapshotLastUploadInstanceMetric SNAPSHOT_LAST_UPLOADED =
      new StateStoreSnapshotLastUploadInstanceMetric(
          Option.empty(), StateStoreId.DEFAULT_STORE_NAME());

  private SparkLineApi() {}

  /** The query's run id, which Spark passes in the Hadoop configuration; null if absent. */
  static String runId(Configuration hadoopConf) {
    return hadoopConf.get(StreamExecution.RUN_ID_KEY());
  }

  static Seq<StateStoreInstanceMetric> instanceMetrics() {
    return ScalaInterop.seq(List.<StateStoreInstanceMetric>of(SNAPSHOT_LAST_UPLOADED));
  }

  /**
   * Spark's metrics object; {@code lastSnapshotVersion} is reported as Spark's instance metric when
   * known (negative: not reported).
   */
  static StateStoreMetrics metrics(
      long numKeys,
      long memoryUsedBytes,
      Map<StateStoreCustomMetric, Object> custom,
      StateStoreId id,
      long lastSnapshotVersion) {
    Map<StateStoreInstanceMetric, Object> instance = new HashMap<>();
    if (lastSnapshotVersion >= 0) {
      instance.put(
          SNAPSHOT_LAST_UPLOADED.withNewId(id.partitionId(), id.storeName()), lastSnapshotVersion);
    }
    return new StateStoreMetrics(
        numKeys, memoryUsedBytes, ScalaInterop.map(custom), ScalaInterop.map(instance));
  }

  /** Spark 4.1+ validates commits through the coordinator when asked to. */
  static void reportCommit(
      StateStoreConf storeConf, long version, StateStoreId id, Configuration hadoopConf) {
    if (storeConf.commitValidationEnabled()) {
      StateStore.reportCommitToCoordinator(version, id, hadoopConf);
    }
  }

  /** Spark's row format check. */
  static void validateStateRowFormat(
      UnsafeRow key,
      StructType keySchema,
      UnsafeRow value,
      StructType valueSchema,
      StateStoreId id,
      StateStoreConf storeConf) {
    StateStoreProvider.validateStateRowFormat(key, keySchema, value, valueSchema, id, storeConf);
  }

  /** Tells the coordinator a snapshot exists, so that it does not flag the store as lagging. */
  static void reportSnapshotUploaded(StateStoreProviderId providerId, long version) {
    Option<StateStoreCoordinatorRef> ref = StateStoreProvider$.MODULE$.coordinatorRef();
    if (ref.isDefined()) {
      ref.get().snapshotUploaded(providerId, version, System.currentTimeMillis());
    }
  }
}
