package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The threads that compact a column family after a commit deleted much of it ({@link
 * LocalDb#apply}), once that commit has returned, and that scan a family for a new live-key filter
 * ({@link FilterRebuild}). A quarter of the process's cores (at least one), so that the compactions
 * of several stores evicting in the same batch take at most that share of the executor away from
 * the tasks that follow; the rest queue. Daemon threads: a store's close waits for its own
 * compaction, and the process's exit stops RocksDB's work first ({@link OpenDatabases}).
 */
final class CompactionPool {
  private CompactionPool() {}

  private static final int SIZE = Math.max(1, Runtime.getRuntime().availableProcessors() / 4);

  static final ExecutorService EXECUTOR = newPool();

  private static ExecutorService newPool() {
    ThreadPoolExecutor pool =
        new ThreadPoolExecutor(
            SIZE,
            SIZE,
            60,
            TimeUnit.SECONDS,
            new LinkedBlockingQueue<>(),
            ProcessResources.daemonThreads("streamstate-compaction-"));
    pool.allowCoreThreadTimeOut(true); // idle ones end after a minute
    return pool;
  }
}
