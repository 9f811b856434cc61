package io.streamstate.spark;

import io.streamstate.spark.shared.StreamStateSettings;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;

/**
 * Our configuration as this Spark line hands it to a provider: {@link StateStoreConf} read into the
 * shared {@link StreamStateSettings}, where every key, its default and its parsing are documented
 * (the keys are inherited, so {@code StreamStateConf.LOCK_TIMEOUT_MS} and the like name them here
 * too).
 */
public final class StreamStateConf extends StreamStateSettings {
  private StreamStateConf(StreamStateSettings settings) {
    super(settings);
  }

  /** Reads our keys from the confs Spark passes to a provider. */
  public static StreamStateConf from(StateStoreConf storeConf) {
    return new StreamStateConf(
        StreamStateSettings.parse(
            ScalaInterop.javaMap(storeConf.sqlConfs()),
            storeConf.minVersionsToRetain(),
            storeConf.minDeltasForSnapshot()));
  }
}
