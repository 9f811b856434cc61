package io.streamstate.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.spark.shared.StateStoreLocations;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/**
 * Where a provider keeps its durable files (its local working directory: {@link LocalDirs}):
 * Spark's {@link StateStoreId} read into the shared {@link StateStoreLocations}, which says how.
 * One instance per process, a component of its {@link ProcessResources}.
 */
final class StoreLocations extends StateStoreLocations {
  private StoreLocations() {}

  /** The registry of {@code resources}. */
  static StoreLocations of(ProcessResources resources) {
    return resources.component(StoreLocations.class, StoreLocations::new);
  }

  /** The location of the store {@code id}. */
  Location resolve(StateStoreId id, Configuration hadoopConf) {
    return resolve(
        id.checkpointRootLocation(),
        id.operatorId(),
        id.partitionId(),
        StateStoreId.DEFAULT_STORE_NAME().equals(id.storeName()) ? null : id.storeName(),
        id.storeCheckpointLocation(),
        hadoopConf);
  }
}
