package io.streamstate.core.engine.commit;

import io.streamstate.core.error.StreamStateException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The changelog uploads of one store in {@code async} durability: commits hand their changelog here
 * and return; uploads run in the background in version order, and a commit blocks while {@code
 * maxLag} uploads are still pending, which bounds what losing the process can lose.
 */
final class AsyncUploads {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncUploads.class);

  private static final long MAX_BACKOFF_MILLIS = 5_000;

  /** Publishes one committed version's changelog durably; throws if it did not. */
  interface Publisher {
    void publish(EncodedCommit pending);
  }

  private final String storeName;
  private final int maxLag;
  private final Publisher publisher;
  private final Executor pool;
  private final ArrayDeque<EncodedCommit> queue = new ArrayDeque<>();
  private boolean draining;
  private boolean closing;
  private StreamStateException lastFailure;
  private long durableVersion = -1;

  /**
   * @param pool runs the uploads: shared by every async store of the process; uploads block on
   *     storage, so a cached pool
   */
  AsyncUploads(String storeName, int maxLag, Publisher publisher, Executor pool) {
    if (maxLag < 1) {
      throw new IllegalArgumentException("async max lag must be >= 1: " + maxLag);
    }
    this.storeName = storeName;
    this.maxLag = maxLag;
    this.publisher = publisher;
    this.pool = pool;
  }

  /** Queues an upload; blocks while {@code maxLag} uploads are pending. */
  synchronized void submit(EncodedCommit pending) {
    while (queue.size() >= maxLag && !closing) {
      try {
        wait();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StreamStateException(
            "Interrupted while store " + storeName + " waited for its upload lag to fall", e);
      }
    }
    queue.add(pending);
    if (!draining) {
      draining = true;
      pool.execute(this::drain);
    }
  }

  /**
   * Waits up to {@code timeoutMillis} until nothing is pending or uploads are failing. Returns
   * whether nothing is pending.
   */
  synchronized boolean awaitDrained(long timeoutMillis) {
    long deadline = System.currentTimeMillis() + timeoutMillis;
    while (!queue.isEmpty() && lastFailure == null) {
      long left = deadline - System.currentTimeMillis();
      if (left <= 0) {
        break;
      }
      try {
        wait(left);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
    }
    return queue.isEmpty();
  }

  /** Versions committed but not yet durable. */
  synchronized int pending() {
    return queue.size();
  }

  /** The newest version this store uploaded, or -1. */
  synchronized long durableVersion() {
    return durableVersion;
  }

  private void drain() {
    long backoff = 50;
    while (true) {
      EncodedCommit next;
      synchronized (this) {
        next = queue.peek();
        if (next == null || (closing && lastFailure != null)) {
          draining = false;
          notifyAll();
          return;
        }
      }
      try {
        publisher.publish(next);
        synchronized (this) {
          queue.poll();
          durableVersion = next.version();
          lastFailure = null;
          notifyAll();
        }
        backoff = 50;
      } catch (StreamStateException e) {
        synchronized (this) {
          lastFailure = e;
          notifyAll();
        }
        LOG.warn(
            "Store {}: upload of version {} failed, retrying in {} ms: {}",
            storeName,
            next.version(),
            backoff,
            e.toString());
        try {
          Thread.sleep(backoff);
        } catch (InterruptedException ie) {
          Thread.currentThread().interrupt();
          return;
        }
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MILLIS);
      }
    }
  }

  /**
   * Stops taking uploads and waits up to {@code timeoutMillis} for the pending ones, unless they
   * are failing. Returns the versions that were never uploaded (lost if this process goes away).
   */
  synchronized List<Long> close(long timeoutMillis) {
    closing = true;
    notifyAll();
    awaitDrained(timeoutMillis);
    List<Long> lost = new ArrayList<>();
    for (EncodedCommit p : queue) {
      lost.add(p.version());
    }
    queue.clear();
    return lost;
  }
}
