package io.streamstate.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;

/**
 * Where a provider keeps its durable files: the {@link Storage} and prefix of a store (its local
 * working directory: {@link LocalDirs}).
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
    Path root = new Path(id.checkpointRootLocation());
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
   * The storage for a state root: the core's NIO storage for {@code file:} roots (no Hadoop, no
   * child processes), a Hadoop {@code FileSystem} storage otherwise, refused with a clear error if
   * the store gives no create-if-absent (see the hadoop module).
   */
  private static Storage open(URI root, Configuration hadoopConf) {
    return HadoopStorages.open(root, hadoopConf);
  }

  private static URI qualify(Path path, Configuration hadoopConf) {
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
