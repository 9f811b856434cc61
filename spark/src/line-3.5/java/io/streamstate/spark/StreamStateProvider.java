package io.streamstate.spark;

import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.state.ReadStateStore;
import org.apache.spark.sql.execution.streaming.state.StateStore;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProvider;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;

/**
 * Spark 3.5's {@code StateStoreProvider} over the streamstate engine: set {@code
 * spark.sql.streaming.stateStore.providerClass=io.streamstate.spark.StreamStateProvider}.
 *
 * <p>3.5's trait is small: {@code init} with a number of prefix key columns instead of a key
 * encoder spec, no column families, {@code getStore(version)} and {@code getReadStore(version)}, no
 * checkpoint ids, no coordinator reports, no instance metrics. Its aggregation reads through a read
 * store and then asks {@code getStore} for the same version in the same task: that read store
 * becomes the writable one in place ({@link StreamStateProviderBase}). Everything else (the engine,
 * its lifecycle, maintenance, metrics) is {@link StreamStateProviderBase}'s, shared with the 4.x
 * lines, and a 3.5 checkpoint loads on 4.x (docs/spark-lines.md).
 */
public class StreamStateProvider extends StreamStateProviderBase implements StateStoreProvider {
  public StreamStateProvider() {}

  @Override
  public void init(
      StateStoreId stateStoreId,
      StructType keySchema,
      StructType valueSchema,
      int numColsPrefixKey,
      StateStoreConf storeConfs,
      Configuration hadoopConf) {
    initStore(
        stateStoreId,
        new PrefixColumnsCodec(DEFAULT_FAMILY, keySchema, valueSchema, numColsPrefixKey),
        false,
        storeConfs,
        hadoopConf);
  }

  @Override
  public StateStore getStore(long version) {
    checkInitialized();
    return (StateStore) open(version, false, false);
  }

  @Override
  public ReadStateStore getReadStore(long version) {
    checkInitialized();
    return (ReadStateStore) open(version, true, false);
  }

  @Override
  public Seq<StateStoreCustomMetric> supportedCustomMetrics() {
    return StreamStateMetrics.customMetrics();
  }
}
