package io.streamstate.core.engine;

import io.streamstate.core.ProcessResources;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * The threads that apply a commit to its local instance while the committing thread publishes it
 * ({@link VersionedStore}, step c3). One thread per commit in flight, so at most one per task slot
 * of the executor; idle ones end after a minute. Daemon threads: an apply never outlives its
 * commit, which waits for it.
 */
final class LocalApplyPool {
  private LocalApplyPool() {}

  static final ExecutorService EXECUTOR =
      new ThreadPoolExecutor(
          0,
          Integer.MAX_VALUE,
          60,
          TimeUnit.SECONDS,
          new SynchronousQueue<>(),
          ProcessResources.daemonThreads("streamstate-local-apply-"));
}
