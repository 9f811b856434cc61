package io.streamstate.core.engine.snapshot;

import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.local.LocalInstance;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which snapshots of one store are taken, and when (docs/protocol.md, "Snapshot"): maintenance's
 * (due by the interval, or now), and forced ones taken at commit and uploaded in the background
 * (f1-f5). One upload per store at a time: maintenance skips while one runs (or waits for it),
 * background requests join it and are answered when it ends, by it or by one follow-up snapshot of
 * the then newest version. The local checkpoint (s1) is taken under the store's lock, which guards
 * the local instance, so that it holds exactly one committed version (I10); the upload ({@link
 * SnapshotUploader}: s2, s3) runs outside it; its publication confirms the instance's SSTs for
 * reuse (s4, I9).
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotScheduler {
  private static final Logger LOG = LoggerFactory.getLogger(SnapshotScheduler.class);

  private final String storeName;
  private final ReentrantLock lock;
  private final LocalInstance local;
  private final SnapshotHistory history;
  private final SnapshotUploader uploader;
  private final StoreOptions options;
  private final StoreMetrics metrics;
  private final BooleanSupplier closed;
  private final Runnable settleLocal;
  private final Executor background;

  /** Signalled when an upload ends. */
  private final Condition ended;

  /** Whether a snapshot of this store is uploading (in the background or in maintenance). */
  private boolean uploading;

  /** Background requests that joined the running upload, and the newest version they asked. */
  private List<CompletableFuture<Long>> waiters = new ArrayList<>();

  private long requested = -1;

  /**
   * Whether a replay-debt snapshot waits on the background pool to start ({@link #afterCommit}).
   */
  private boolean debtSnapshotQueued;

  /**
   * @param lock the store's lock, which guards {@code local}; this scheduler's state too
   * @param closed whether the store closed (read without the lock by uploads, which then stop)
   * @param settleLocal run under the lock before a checkpoint: makes the local instance's newest
   *     version durable if its commit returned before it was, or discards the instance
   * @param background where background uploads run (the process's pool: {@link
   *     SnapshotUploader#background()})
   */
  public SnapshotScheduler(
      String storeName,
      ReentrantLock lock,
      LocalInstance local,
      SnapshotHistory history,
      SnapshotUploader uploader,
      StoreOptions options,
      StoreMetrics metrics,
      BooleanSupplier closed,
      Runnable settleLocal,
      Executor background) {
    this.storeName = storeName;
    this.lock = lock;
    this.local = local;
    this.history = history;
    this.uploader = uploader;
    this.options = options;
    this.metrics = metrics;
    this.closed = closed;
    this.settleLocal = settleLocal;
    this.background = background;
    this.ended = lock.newCondition();
  }

  /**
   * A snapshot of the local instance if it is at least {@code snapshotInterval} versions past the
   * last one, in the calling thread; skipped while an upload of this store runs.
   *
   * @return the version snapshotted, or -1
   */
  public long snapshotIfDue() {
    return snapshot(false);
  }

  /**
   * A snapshot of the local instance now, in the calling thread, after the running upload of this
   * store ends. Returns its version, or -1 if the local version has a snapshot already.
   */
  public long snapshotNow() {
    return snapshot(true);
  }

  /**
   * A snapshot of {@code version}, just committed, uploaded in the background (f1-f5): see {@code
   * VersionedStore.snapshotInBackground}.
   */
  public CompletableFuture<Long> snapshotInBackground(long version) {
    CompletableFuture<Long> done = new CompletableFuture<>();
    LocalCheckpoint checkpoint;
    lock.lock();
    try {
      if (closed.getAsBoolean()) {
        done.complete(-1L);
        return done;
      }
      if (version <= history.last()) {
        done.complete(history.last());
        return done;
      }
      if (uploading) {
        // f4: coalesced, served when the running upload ends (uploadEnded).
        waiters.add(done);
        requested = Math.max(requested, version);
        return done;
      }
      if (!local.holds(version)) {
        done.complete(-1L);
        return done;
      }
      checkpoint = LocalCheckpoint.of(local); // f1
      uploading = true;
    } catch (RuntimeException e) {
      snapshotFailed(version, e);
      done.completeExceptionally(e);
      return done;
    } finally {
      lock.unlock();
    }
    uploadInBackground(checkpoint, List.of(done));
    return done;
  }

  /**
   * After the commit of {@code version}, under the store's lock: if a load would now replay more
   * changes (those of the versions since the last snapshot) than {@code replayDebtPercent} of the
   * store's keys, and more than {@code replayDebtMinChanges}, a snapshot of the newest local
   * version is taken on the background pool, its local checkpoint (a memtable flush) included, so
   * that the committing task never waits for it (docs/protocol.md, "Replay-debt snapshot"); after
   * the compactions the instance's large deletes started, if any run. At most one is queued per
   * store; none while an upload runs.
   *
   * @return whether a snapshot was queued
   */
  public boolean afterCommit(long version) {
    long last = history.last();
    // First, whatever follows: it also forgets the counts of versions the last snapshot covers.
    long debt = local.changesAbove(last);
    int percent = options.replayDebtPercent();
    if (percent == 0 || uploading || debtSnapshotQueued || closed.getAsBoolean()) {
      return false;
    }
    if (debt <= options.replayDebtMinChanges()) {
      return false; // small, or unknown (-1): the instance opened above the last snapshot
    }
    long keys = local.estimateKeys();
    if (debt * 100 < percent * keys) {
      return false;
    }
    debtSnapshotQueued = true;
    metrics.countReplayDebtSnapshot();
    LOG.info(
        "Store {}: {} changes to replay since snapshot {} at version {} (~{} keys): snapshotting"
            + " in the background",
        storeName,
        debt,
        last,
        version,
        keys);
    // After the compaction this commit's deletions may have started (LocalDb#compactAfterDeletes):
    // a snapshot of the compacted files is smaller, and a load of it scans no tombstones. At once
    // (on the pool) when none runs.
    CompletableFuture<Void> queued =
        local.compactionsDone().thenRunAsync(this::snapshotNewestInBackground, background);
    queued.exceptionally(
        e -> {
          debtSnapshotNotStarted(version, e);
          return null;
        });
    return !queued.isCompletedExceptionally();
  }

  /** The queued replay-debt snapshot could not start (the pool refused it). */
  private void debtSnapshotNotStarted(long version, Throwable e) {
    lock.lock();
    try {
      debtSnapshotQueued = false;
      ended.signalAll();
    } finally {
      lock.unlock();
    }
    snapshotFailed(version, e instanceof CompletionException c ? c.getCause() : e);
  }

  /** The queued replay-debt snapshot: f1 of the newest local version, then f2-f5. */
  private void snapshotNewestInBackground() {
    lock.lock();
    try {
      debtSnapshotQueued = false;
      if (!closed.getAsBoolean() && local.isOpen()) {
        snapshotInBackground(local.version()); // failures are logged and counted there (f5)
      }
    } finally {
      ended.signalAll(); // awaitUploads: if nothing started, nothing is left to wait for
      lock.unlock();
    }
  }

  /**
   * Waits, at most {@code timeout}, until no upload of this store runs and no replay-debt snapshot
   * waits to start (follow-ups of joined requests included), so that a store about to close at a
   * clean stop publishes the snapshot it is writing rather than dropping it.
   *
   * @return whether none runs or waits now; false if the time ran out, the store closed or the
   *     calling thread was interrupted (its interrupt status is kept)
   */
  public boolean awaitUploads(Duration timeout) {
    long nanos = timeout.toNanos();
    lock.lock();
    try {
      while ((uploading || debtSnapshotQueued) && !closed.getAsBoolean()) {
        if (nanos <= 0) {
          return false;
        }
        nanos = ended.awaitNanos(nanos);
      }
      return !uploading && !debtSnapshotQueued;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return false;
    } finally {
      lock.unlock();
    }
  }

  /** Whether an upload of this store is running (retention skips r5 meanwhile). */
  public boolean isUploading() {
    lock.lock();
    try {
      return uploading;
    } finally {
      lock.unlock();
    }
  }

  /**
   * The store closed (called under its lock): wakes a waiting {@link #snapshotNow} and hands back
   * the requests still waiting to join, which the caller completes with -1 outside the lock.
   */
  public List<CompletableFuture<Long>> close() {
    List<CompletableFuture<Long>> left = waiters;
    waiters = new ArrayList<>();
    requested = -1;
    ended.signalAll();
    return left;
  }

  private long snapshot(boolean force) {
    LocalCheckpoint checkpoint;
    // s1: a local checkpoint, under the lock so that it holds exactly one committed version (I10).
    lock.lock();
    try {
      if (force) {
        while (uploading && !closed.getAsBoolean()) {
          ended.awaitUninterruptibly();
        }
      } else if (uploading) {
        return -1;
      }
      long version = local.version();
      long last = history.last();
      if (closed.getAsBoolean() || !local.isOpen() || version <= 0 || version <= last) {
        return -1;
      }
      if (!force && version - Math.max(last, 0) < options.snapshotInterval()) {
        return -1;
      }
      settleLocal.run(); // a snapshot of a commit that may still fail must not be published
      if (!local.isOpen() || local.version() != version) {
        return -1; // it failed: the instance is gone
      }
      checkpoint = LocalCheckpoint.of(local);
      uploading = true;
    } finally {
      lock.unlock();
    }
    try {
      return uploadAndConfirm(checkpoint);
    } catch (RuntimeException e) {
      metrics.countSnapshotFailure();
      throw e;
    } finally {
      uploadEnded();
    }
  }

  /**
   * s2 and s3 (SnapshotUploader), then s4: the published SSTs become the confirmed set that later
   * snapshots reuse (I9). Ends this upload's use of the checkpoint. Returns the version published,
   * or -1 if the store closed first (no manifest published).
   */
  private long uploadAndConfirm(LocalCheckpoint checkpoint) {
    try {
      SnapshotUploader.Published published = uploader.upload(checkpoint, closed);
      if (published == null) {
        LOG.info(
            "Store {}: closed while uploading snapshot {}; it was not published",
            storeName,
            checkpoint.version);
        return -1;
      }
      lock.lock();
      try {
        history.published(checkpoint.version);
        local.confirm(checkpoint.generation, published.shared());
      } finally {
        lock.unlock();
      }
      return checkpoint.version;
    } finally {
      checkpoint.release();
    }
  }

  /** f2: uploads {@code checkpoint} on the background pool, then completes {@code waiters}. */
  private void uploadInBackground(
      LocalCheckpoint checkpoint, List<CompletableFuture<Long>> waiting) {
    try {
      background.execute(() -> runInBackground(checkpoint, waiting));
    } catch (RejectedExecutionException e) {
      checkpoint.release();
      snapshotFailed(checkpoint.version, e);
      uploadEnded();
      waiting.forEach(w -> w.completeExceptionally(e));
    }
  }

  private void runInBackground(LocalCheckpoint checkpoint, List<CompletableFuture<Long>> waiting) {
    long version = -1;
    Throwable failure = null;
    try {
      version = uploadAndConfirm(checkpoint);
    } catch (RuntimeException | Error e) {
      failure = e;
      snapshotFailed(checkpoint.version, e);
    } finally {
      uploadEnded();
    }
    // f3: answered once the manifest is durable.
    for (CompletableFuture<Long> w : waiting) {
      if (failure == null) {
        w.complete(version);
      } else {
        w.completeExceptionally(failure);
      }
    }
    if (failure instanceof Error error) {
      throw error;
    }
  }

  /** f5: logged and counted; the version stays durable in its changelogs. */
  private void snapshotFailed(long version, Throwable e) {
    metrics.countSnapshotFailure();
    LOG.warn(
        "Store {}: background snapshot of version {} failed; the version stays durable in its"
            + " changelogs and a later snapshot tries again: {}",
        storeName,
        version,
        e.toString(),
        e);
  }

  /**
   * Ends the running upload (f4). Requests that joined it are served: by a snapshot at or above the
   * newest version they asked for if one exists now, else by a background upload of the newest
   * local version.
   */
  private void uploadEnded() {
    List<CompletableFuture<Long>> joined;
    LocalCheckpoint next = null;
    long answer = -1;
    RuntimeException failure = null;
    lock.lock();
    try {
      uploading = false;
      ended.signalAll();
      if (waiters.isEmpty()) {
        return;
      }
      joined = waiters;
      waiters = new ArrayList<>();
      long asked = requested;
      requested = -1;
      if (closed.getAsBoolean()) {
        answer = -1;
      } else if (history.last() >= asked) {
        answer = history.last();
      } else if (!local.isOpen() || local.version() < asked) {
        answer = -1; // the local instance was discarded: nothing of that version to snapshot
      } else {
        try {
          next = LocalCheckpoint.of(local);
          uploading = true;
        } catch (RuntimeException e) {
          snapshotFailed(local.version(), e);
          failure = e;
        }
      }
    } finally {
      lock.unlock();
    }
    // Outside the lock: completing runs the callers' callbacks.
    if (failure != null) {
      for (CompletableFuture<Long> w : joined) {
        w.completeExceptionally(failure);
      }
    } else if (next != null) {
      uploadInBackground(next, joined);
    } else {
      for (CompletableFuture<Long> w : joined) {
        w.complete(answer);
      }
    }
  }
}
