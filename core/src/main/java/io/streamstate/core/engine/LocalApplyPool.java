package io.streamstate.core.engine;

import io.streamstate.core.ProcessResources;
import java.util.concurrent.ExecutorService;

/**
 * The threads that apply a commit to its local instance while the committing thread publishes it
 * ({@link VersionedStore}, step c3). One thread per commit in flight, so at most one per task slot
 * of the executor; idle ones end after a minute. Daemon threads: an apply never outlives its
 * commit, which waits for it.
 */
final class LocalApplyPool {
  private LocalApplyPool() {}

  static final ExecutorService EXECUTOR =
      ProcessResources.threadPerTask("streamstate-local-apply-");
}
