package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.util.concurrent.ExecutorService;

/**
 * The threads that write a version into RocksDB after its apply returned ({@link LocalDb#apply}: a
 * store whose every family is mirrored in the heap). At most one write in flight per open store:
 * the next apply waits for it. Idle threads end after a minute; daemon threads, since a store's
 * close waits for its write.
 */
final class LocalWritePool {
  private LocalWritePool() {}

  static final ExecutorService EXECUTOR =
      ProcessResources.threadPerTask("streamstate-local-write-");
}
