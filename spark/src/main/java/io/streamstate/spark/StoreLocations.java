package io.streamstate.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.SparkEnv;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/**
 * Where a provider keeps its files: the durable {@link Storage} and prefix of a store, and its
 * local working directory.
 *
 * <p>One {@link Storage} per state root ({@code <checkpoint>/state}) per process (this registry is
 * a component of its {@link ProcessResources}), shared by all the partitions and operators of a
 * query: the first provider of a root opens it with its Hadoop configuration. Each store is a
 * prefix in it: {@code <operatorId>/<partitionId>/} plus {@code <storeName>/} for named stores
 * (joins), exactly the directory Spark's own providers use ({@link
 * StateStoreId#storeCheckpointLocation()}).
 */
final class StoreLocations {
  private final Map<URI, Storage> storages = new ConcurrentHashMap<>();

  private StoreLocations() {}

  /** The registry of {@code resources}. */
  static StoreLocations of(ProcessResources resources) {
    return resources.component(StoreLocations.class, StoreLocations::new);
  }

  /** A store's storage and its prefix in it (ends with {@code /}). */
  record Location(Storage storage, String prefix) {}

  Location resolve(StateStoreId id, Configuration hadoopConf) {
    org.apache.hadoop.fs.Path root = new org.apache.hadoop.fs.Path(id.checkpointRootLocation());
    URI rootUri = qualify(root, hadoopConf);
    String prefix = id.operatorId() + "/" + id.partitionId() + "/";
    if (!StateStoreId.DEFAULT_STORE_NAME().equals(id.storeName())) {
      prefix += id.storeName() + "/";
    }
    URI expected = qualify(id.storeCheckpointLocation(), hadoopConf);
    URI composed = URI.create(withTrailingSlash(rootUri.toString()) + prefix);
    if (!withTrailingSlash(expected.toString()).equals(composed.toString())) {
      // Spark composed the store directory differently: use it as a root of its own.
      rootUri = expected;
      prefix = "";
    }
    URI key = rootUri;
    Storage storage = storages.computeIfAbsent(key, k -> open(k, hadoopConf));
    return new Location(storage, prefix);
  }

  /**
   * A fresh local directory for one provider instance, under the configured root, else the
   * executor's local directory (removed by Spark when the application ends), else {@code
   * java.io.tmpdir}.
   */
  static Path localDir(StreamStateConf conf, StateStoreId id) {
    String root = conf.localDir().orElseGet(StoreLocations::sparkLocalDir);
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
        return org.apache.spark.util.Utils.getLocalDir(env.conf());
      } catch (RuntimeException e) {
        // fall through: no usable local directory configured
      }
    }
    return System.getProperty("java.io.tmpdir");
  }

  /**
   * The storage for a state root: the core's NIO storage for {@code file:} roots (no Hadoop, no
   * child processes), a Hadoop {@code FileSystem} storage otherwise, refused with a clear error if
   * the store gives no create-if-absent (see the hadoop module).
   */
  private static Storage open(URI root, Configuration hadoopConf) {
    return HadoopStorages.open(root, hadoopConf);
  }

  private static URI qualify(org.apache.hadoop.fs.Path path, Configuration hadoopConf) {
    if (path.toUri().getScheme() != null) {
      return path.toUri().normalize();
    }
    try {
      return path.getFileSystem(hadoopConf).makeQualified(path).toUri().normalize();
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot resolve the file system of " + path, e);
    }
  }

  private static String withTrailingSlash(String s) {
    return s.endsWith("/") ? s : s + "/";
  }
}
