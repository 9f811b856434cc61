package io.streamstate.dstream.state;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.apache.spark.SparkEnv;
import org.apache.spark.util.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The open stores of one process (an executor, or the driver in local mode), one per state location
 * and partition, kept open from batch to batch so that a batch finds its partition's previous
 * version in the local RocksDB instance (the warm path: nothing read from storage). A component of
 * the process's {@link ProcessResources}: closed with it, and at JVM shutdown.
 *
 * <p>One task at a time uses a store: {@link #withStore} holds the store's lock for the whole call,
 * so that a task retry or a speculative attempt of the same partition in the same executor waits
 * instead of finding a transaction open.
 */
public final class PartitionStores implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PartitionStores.class);

  /** Maintenance (snapshot, retention) of a store runs after every this many versions. */
  static final int MAINTENANCE_INTERVAL = 10;

  private record StoreKey(StateLocation location, int partition) {}

  private static final class Entry {
    final ReentrantLock lock = new ReentrantLock();
    volatile VersionedStore store;
  }

  private final ProcessResources resources;
  private final Map<StoreKey, Entry> entries = new HashMap<>();
  private final Map<StateLocation, Storage> storages = new HashMap<>();
  private final ExecutorService maintenance;
  private boolean closed;

  private PartitionStores(ProcessResources resources) {
    this.resources = resources;
    this.maintenance = resources.boundedPool("streamstate-dstream-maintenance", 1);
    Thread hook = new Thread(this::close, "streamstate-dstream-stores-shutdown");
    Runtime.getRuntime().addShutdownHook(hook);
  }

  /** The stores of the process that {@code resources} owns. */
  public static PartitionStores of(ProcessResources resources) {
    return resources.component(PartitionStores.class, () -> new PartitionStores(resources));
  }

  /**
   * Runs {@code action} on partition {@code partition}'s store of {@code location}, opening it on
   * first use, with the store to itself.
   */
  public <T> T withStore(
      StateLocation location, int partition, Function<VersionedStore, T> action) {
    Entry entry;
    synchronized (this) {
      if (closed) {
        throw new IllegalStateException("The process's streamstate DStream stores are closed");
      }
      entry = entries.computeIfAbsent(new StoreKey(location, partition), k -> new Entry());
    }
    entry.lock.lock();
    try {
      if (entry.store == null) {
        entry.store = open(location, partition);
      }
      return action.apply(entry.store);
    } catch (RuntimeException | Error e) {
      // A store whose transaction failed half-way is not trusted again: the next task reopens it.
      VersionedStore broken = entry.store;
      entry.store = null;
      if (broken != null) {
        closeQuietly(broken);
      }
      throw e;
    } finally {
      entry.lock.unlock();
    }
  }

  /**
   * The loads of the open stores of {@code location} in this process so far: {@code [warm,
   * durable]} (for tests: the warm path is what a cached store is for).
   */
  synchronized long[] loads(StateLocation location) {
    long[] loads = new long[2];
    entries.forEach(
        (key, entry) -> {
          VersionedStore store = entry.store;
          if (key.location().equals(location) && store != null) {
            loads[0] += store.metrics().snapshot().warmLoads();
            loads[1] += store.metrics().snapshot().durableLoads();
          }
        });
    return loads;
  }

  /** Snapshots and applies retention in the background, every {@link #MAINTENANCE_INTERVAL}. */
  void maintainIfDue(StateLocation location, int partition, long version) {
    if (version % MAINTENANCE_INTERVAL != 0) {
      return;
    }
    maintenance.execute(
        () -> {
          Entry entry;
          synchronized (this) {
            entry = entries.get(new StoreKey(location, partition));
          }
          VersionedStore store = entry == null ? null : entry.store;
          if (store == null) {
            return;
          }
          try {
            store.maintain(); // may run concurrently with a transaction (VersionedStore's contract)
          } catch (RuntimeException e) {
            // Best effort: a failed snapshot or deletion only delays the next one.
            LOG.warn("Maintenance of store {} failed: {}", store.name(), e.toString(), e);
          }
        });
  }

  private VersionedStore open(StateLocation location, int partition) {
    Storage storage;
    synchronized (this) {
      storage = storages.computeIfAbsent(location, StateLocation::openStorage);
    }
    Path dir = localDir(location, partition);
    return VersionedStore.builder(location.name() + "/part=" + partition, storage)
        .prefix(location.partitionPrefix(partition))
        .localDir(dir)
        .resources(resources)
        .memoryBudget(RocksDbMemoryBudget.shared(resources, RocksDbMemoryBudget.DEFAULT_CAP_BYTES))
        .open();
  }

  /**
   * A fresh local directory: under the location's, else the executor's local directory ({@code
   * spark.local.dir}, YARN/K8s dirs; removed by Spark when the application ends), else {@code
   * java.io.tmpdir}. The store deletes it when it closes.
   */
  private static Path localDir(StateLocation location, int partition) {
    String base = location.localDir();
    if (base == null) {
      SparkEnv env = SparkEnv.get();
      if (env != null) {
        try {
          base = Utils.getLocalDir(env.conf());
        } catch (RuntimeException e) {
          // fall through: no usable local directory configured
        }
      }
      if (base == null) {
        base = System.getProperty("java.io.tmpdir");
      }
    }
    Path dir =
        Paths.get(
            base,
            "streamstate-dstream",
            location.name() + "-p" + partition + "-" + UUID.randomUUID());
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot create the local directory " + dir, e);
    }
    return dir;
  }

  /** Closes every store (frees local resources; writes nothing durable) and the storages. */
  @Override
  public void close() {
    List<Entry> toClose;
    List<Storage> toCloseStorages;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      toClose = new ArrayList<>(entries.values());
      toCloseStorages = new ArrayList<>(storages.values());
      entries.clear();
      storages.clear();
    }
    for (Entry entry : toClose) {
      VersionedStore store = entry.store;
      if (store != null) {
        closeQuietly(store);
      }
    }
    for (Storage storage : toCloseStorages) {
      try {
        storage.close();
      } catch (Exception e) {
        LOG.warn("Closing storage {} failed: {}", storage.describe(), e.toString());
      }
    }
  }

  private static void closeQuietly(VersionedStore store) {
    try {
      store.close();
    } catch (RuntimeException e) {
      LOG.warn("Closing store {} failed: {}", store.name(), e.toString());
    }
  }
}
