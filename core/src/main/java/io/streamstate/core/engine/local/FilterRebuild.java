package io.streamstate.core.engine.local;

import io.streamstate.core.engine.ByteKeys;
import java.util.Arrays;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A new live-key filter for one column family, built off the commit's path from a scan of a RocksDB
 * snapshot, for a family whose filter is filling up.
 *
 * <p>A filter only grows (a deleted key stays in it), and a full scan of the family by a
 * transaction builds a fresh one ({@link LocalDb#newIterator}); but some families are never scanned
 * in full: Spark's stream-stream join reads its key-with-index store by key only, a deduplication
 * without a watermark never scans. Their filters filled up and were dropped, and from then on every
 * read that misses and every put (Spark counts rows, so a put asks whether its key existed) went to
 * RocksDB: a fifth of a saturated join's store time (docs/bench/2026-12-03-issue21.md section 18).
 *
 * <p>The snapshot is taken right after an apply, so the scan sees every change up to it; the puts
 * of the applies after it are recorded here as hashes ({@link #addPut}, the apply thread) and added
 * when an apply takes the filter ({@link #filter}), so the filter it installs holds every live key.
 * The snapshot is this object's: released when the scan ends, or by {@link #cancel} if the scan
 * never started.
 */
final class FilterRebuild {
  private static final Logger LOG = LoggerFactory.getLogger(FilterRebuild.class);

  private enum State {
    QUEUED,
    SCANNING,
    SCANNED,
    FAILED,
    CANCELLED
  }

  private final RocksDB db;
  private final ColumnFamilyHandle handle;
  private final Snapshot snapshot;
  private final String description;

  /** Guarded by {@code this}; waiters wait on it. */
  private State state = State.QUEUED;

  private boolean cancelRequested;

  /** The scan's result: the hashes of the snapshot's keys. */
  private KeyHashes scanned;

  /** Hashes of the keys put after the snapshot (the apply thread only). */
  private long[] puts = new long[256];

  private int putCount;

  private FilterRebuild(RocksDB db, ColumnFamilyHandle handle, String description) {
    this.db = db;
    this.handle = handle;
    this.snapshot = db.getSnapshot();
    this.description = description;
  }

  /**
   * Takes a snapshot of {@code handle}'s family as it is now (call it right after an apply, under
   * the instance's lock) and queues its scan on {@code executor}.
   */
  static FilterRebuild start(
      RocksDB db, ColumnFamilyHandle handle, String description, Executor executor) {
    FilterRebuild rebuild = new FilterRebuild(db, handle, description);
    try {
      executor.execute(rebuild::scan);
    } catch (RejectedExecutionException e) {
      rebuild.cancel();
    }
    return rebuild;
  }

  /** Records a key put after the snapshot, by its {@link ByteKeys#hash64}. */
  void addPut(long hash) {
    if (putCount == puts.length) {
      puts = Arrays.copyOf(puts, putCount * 2);
    }
    puts[putCount++] = hash;
  }

  /** Whether the scan has ended (done, failed or cancelled): {@link #filter} answers at once. */
  synchronized boolean ended() {
    return state == State.SCANNED || state == State.FAILED || state == State.CANCELLED;
  }

  /**
   * The new filter, over the snapshot's keys and every put recorded since; null if the scan failed,
   * was cancelled or has not ended.
   */
  synchronized LiveKeyFilter filter() {
    if (state != State.SCANNED) {
      return null;
    }
    LiveKeyFilter filter = scanned.filter(putCount);
    for (int i = 0; i < putCount; i++) {
      filter.addHash(puts[i]);
    }
    return filter;
  }

  /**
   * Stops the rebuild: a scan not yet started never starts (and its snapshot is released now), a
   * running one stops soon; returns once no scan uses the family's handle or the snapshot.
   */
  synchronized void cancel() {
    if (state == State.QUEUED) {
      state = State.CANCELLED;
      db.releaseSnapshot(snapshot);
      return;
    }
    cancelRequested = true;
    boolean interrupted = false;
    while (state == State.SCANNING) {
      try {
        wait();
      } catch (InterruptedException e) {
        interrupted = true; // the scan must end before the handle goes: wait on
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  private synchronized boolean cancelRequested() {
    return cancelRequested;
  }

  private void scan() {
    synchronized (this) {
      if (state != State.QUEUED) {
        return;
      }
      state = State.SCANNING;
    }
    KeyHashes keys = new KeyHashes();
    EntryCopier copier = new EntryCopier();
    State outcome = State.FAILED;
    try (ReadOptions options = new ReadOptions().setSnapshot(snapshot).setFillCache(false);
        RocksIterator it = db.newIterator(handle, options)) {
      it.seekToFirst();
      while (it.isValid()) {
        if ((keys.count() & 0xFFFF) == 0 && cancelRequested()) {
          break;
        }
        if (!keys.add(copier.key(it))) {
          break; // too many keys for a filter: none, as for a full scan
        }
        it.next();
      }
      it.status();
      if (!it.isValid()) {
        outcome = State.SCANNED;
      }
    } catch (RocksDBException | RuntimeException e) {
      // Only reads get slower: they ask RocksDB, as they did while the family had no filter.
      LOG.warn("Rebuilding the live-key filter of {} failed: {}", description, e.toString());
    } finally {
      db.releaseSnapshot(snapshot);
      synchronized (this) {
        state = cancelRequested ? State.CANCELLED : outcome;
        scanned = keys;
        notifyAll();
      }
    }
  }
}
