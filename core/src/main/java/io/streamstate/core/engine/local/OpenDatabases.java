package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.rocksdb.Env;
import org.rocksdb.Priority;
import org.rocksdb.RocksDBException;

/**
 * The RocksDB instances a process has open (a component of its {@link ProcessResources}). Spark
 * never closes state store providers when a session stops, so executors exit with their RocksDB
 * instances open; a flush or compaction still running while the process's native destructors run
 * then crashes the JVM (SIGSEGV or abort, exit code 134). A shutdown hook stops their background
 * work first. It also sets what RocksDB's background threads share across the process: its
 * compactions run at the lowest CPU priority (in every RocksDB instance of the process, Spark's own
 * provider's included, since they share RocksDB's default environment).
 *
 * <p>Not closed with its owner: the instances belong to their stores, which close them.
 */
public final class OpenDatabases {
  private final Set<LocalDb> open = ConcurrentHashMap.newKeySet();

  private OpenDatabases() {
    // RocksDB's compactions run on the process's shared low-priority pool, beside the tasks that
    // read and write the stores: at the lowest CPU priority they take the cores the tasks leave
    // idle instead of a share of a batch's (issue 21 bench, section 32). Flushes (the high pool)
    // keep theirs: a memtable that cannot flush stalls writes.
    Env.getDefault().lowerThreadPoolCPUPriority(Priority.LOW);
    Runtime.getRuntime().addShutdownHook(new Thread(this::stopBackgroundWork, "streamstate-exit"));
  }

  /** The open instances of {@code resources}'s process. */
  public static OpenDatabases of(ProcessResources resources) {
    return resources.component(OpenDatabases.class, OpenDatabases::new);
  }

  void add(LocalDb db) {
    open.add(db);
  }

  void remove(LocalDb db) {
    open.remove(db);
  }

  /** Instances open now. */
  public int count() {
    return open.size();
  }

  /**
   * A RocksDB integer property summed over the column families of every open instance (for
   * diagnostics: {@link RocksDbMemoryBudget#processUsage}). Each instance is read under its lock,
   * so none closes while it is read.
   */
  long sum(String property) {
    long n = 0;
    for (LocalDb local : open) {
      synchronized (local) {
        if (!local.isClosed()) {
          try {
            n += local.aggregatedLongProperty(property);
          } catch (RocksDBException e) {
            // a property this build does not know: nothing to add
          }
        }
      }
    }
    return n;
  }

  /** Waits for running flushes and compactions of every open instance and schedules no more. */
  void stopBackgroundWork() {
    for (LocalDb local : open) {
      synchronized (local) {
        if (!local.isClosed()) {
          local.cancelBackgroundWork();
        }
      }
    }
  }
}
