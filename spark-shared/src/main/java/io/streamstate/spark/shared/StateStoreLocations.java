package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * Where a provider keeps its durable files: the {@link Storage} and prefix of a store, from the
 * fields of Spark's {@code StateStoreId}. Spark-free: each adapter's {@code StoreLocations} extends
 * this class, registers itself as a component of its {@link ProcessResources} and reads {@code
 * StateStoreId} into {@link #resolve}.
 *
 * <p>One {@link Storage} per state root ({@code <checkpoint>/state}) per process, shared by all the
 * partitions and operators of a query: the first provider of a root opens it with its Hadoop
 * configuration. Each store is a prefix in it: {@code <operatorId>/<partitionId>/} plus {@code
 * <storeName>/} for named stores (joins), exactly the directory Spark's own providers use ({@code
 * StateStoreId.storeCheckpointLocation()}).
 */
public abstract class StateStoreLocations {
  private final Map<URI, Storage> storages = new ConcurrentHashMap<>();
  private final Set<URI> storeDirectories = ConcurrentHashMap.newKeySet();

  /** For an adapter's subclass, one instance per {@link ProcessResources}. */
  protected StateStoreLocations() {}

  /** A store's storage and its prefix in it (ends with {@code /}). */
  public record Location(Storage storage, String prefix) {}

  /**
   * The location of one store.
   *
   * @param checkpointRootLocation the state root, {@code StateStoreId.checkpointRootLocation()}
   * @param operatorId {@code StateStoreId.operatorId()}
   * @param partitionId {@code StateStoreId.partitionId()}
   * @param storeName {@code StateStoreId.storeName()}, or null for Spark's default store (no
   *     directory of its own)
   * @param storeCheckpointLocation the directory Spark's own providers would use, {@code
   *     StateStoreId.storeCheckpointLocation()}: if Spark composed it differently from the above,
   *     it becomes a root of its own (empty prefix)
   * @param hadoopConf opens the root's storage if this process has not yet
   */
  public Location resolve(
      String checkpointRootLocation,
      long operatorId,
      int partitionId,
      String storeName,
      Path storeCheckpointLocation,
      Configuration hadoopConf) {
    Path root = new Path(checkpointRootLocation);
    URI rootUri = qualify(root, hadoopConf);
    String prefix = operatorId + "/" + partitionId + "/";
    if (storeName != null) {
      prefix += storeName + "/";
    }
    URI expected = qualify(storeCheckpointLocation, hadoopConf);
    URI composed = URI.create(withTrailingSlash(rootUri.toString()) + prefix);
    if (!withTrailingSlash(expected.toString()).equals(composed.toString())) {
      // Spark composed the store directory differently: use it as a root of its own.
      rootUri = expected;
      prefix = "";
    }
    URI key = rootUri;
    Storage storage = storages.computeIfAbsent(key, k -> open(k, hadoopConf));
    ensureDirectory(expected, hadoopConf);
    return new Location(storage, prefix);
  }

  /**
   * Makes a store's directory exist, once per store and process, as Spark's own providers do when
   * they start: Spark's state data source and its offline repartitioning find a checkpoint's
   * partitions by their directories and refuse a gap (StateScanBuilder.planInputPartitions), and a
   * partition whose commits all went into group commit's shared segments has no file of its own.
   */
  private void ensureDirectory(URI store, Configuration hadoopConf) {
    if (!storeDirectories.add(store)) {
      return;
    }
    try {
      if ("file".equals(store.getScheme())) {
        // Hadoop's local file system forks a process to set a new directory's permissions.
        Files.createDirectories(java.nio.file.Path.of(store));
      } else {
        Path dir = new Path(store);
        dir.getFileSystem(hadoopConf).mkdirs(dir);
      }
    } catch (IOException e) {
      storeDirectories.remove(store);
      throw new UncheckedIOException("Cannot create the state store directory " + store, e);
    }
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
