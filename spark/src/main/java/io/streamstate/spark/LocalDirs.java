package io.streamstate.spark;

import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.UUID;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.util.Utils;

/**
 * The local directories of this module on an executor: a provider's working directory (its local
 * RocksDB) and the root of the file sink's spill files, under the executor's local directory.
 */
final class LocalDirs {
  /** Directory under the executor's local directory that holds the sink's spill files. */
  static final String SINK_SPILL_DIRECTORY = "streamstate-sink-spill";

  private LocalDirs() {}

  /**
   * A fresh local directory for one provider instance, under the configured root, else the
   * executor's local directory (removed by Spark when the application ends), else {@code
   * java.io.tmpdir}.
   */
  static Path localDir(StreamStateConf conf, StateStoreId id) {
    String root = conf.localDir().orElseGet(LocalDirs::sparkLocalDir);
    String name =
        "op"
            + id.operatorId()
            + "-part"
            + id.partitionId()
            + "-"
            + id.storeName()
            + "-"
            + UUID.randomUUID();
    return Paths.get(root, "streamstate", name).toAbsolutePath();
  }

  /**
   * The executor's local directory (Spark's {@code spark.local.dir}, YARN/K8s dirs), else {@code
   * java.io.tmpdir}.
   */
  static String sparkLocalDir() {
    SparkEnv env = SparkEnv.get();
    if (env != null) {
      try {
        return Utils.getLocalDir(env.conf());
      } catch (RuntimeException e) {
        // fall through: no usable local directory configured
      }
    }
    return System.getProperty("java.io.tmpdir");
  }

  /** The root of the spill files of this JVM's sink tasks: under the executor's local directory. */
  static Path sinkSpillRoot() {
    return Paths.get(sparkLocalDir(), SINK_SPILL_DIRECTORY).toAbsolutePath();
  }
}
