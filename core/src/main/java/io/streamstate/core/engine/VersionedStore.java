package io.streamstate.core.engine;

import io.streamstate.core.engine.commit.CommitPublisher;
import io.streamstate.core.engine.commit.EncodedCommit;
import io.streamstate.core.engine.commit.PublishedCommit;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.recovery.ChangeFeed;
import io.streamstate.core.engine.recovery.LineageLoader;
import io.streamstate.core.engine.recovery.SnapshotReplay;
import io.streamstate.core.engine.retention.RetentionPlanner;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.retention.StoreRetention;
import io.streamstate.core.engine.snapshot.SnapshotHistory;
import io.streamstate.core.engine.snapshot.SnapshotScheduler;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.storage.Storage;
import java.time.Duration;
import java.util.List;
import java.util.NavigableMap;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition of versioned state: a local RocksDB instance (the working state) over durable
 * changelogs and snapshots (see {@code docs/protocol.md} for every step). Built with {@link
 * #builder}.
 *
 * <ul>
 *   <li>{@link #begin(long)} loads a version; warm when the local instance holds it already.
 *   <li>{@link StateTransaction#commit()} publishes the commit durably and, at the same time,
 *       applies the batch locally; it returns once both are done.
 *   <li>{@link #maintain()} snapshots and applies retention; never called on the commit path.
 * </ul>
 *
 * <p>One transaction at a time; {@code maintain()} may run concurrently from another thread, and
 * {@link #snapshotInBackground} uploads on a pool of its own. {@link #close()} frees local
 * resources and writes nothing durable, so closing is also how a test simulates a crash.
 *
 * <p>This class orchestrates a store's lifecycle; the mechanisms are its collaborators, wired by
 * {@link VersionedStoreBuilder}: the {@link LocalInstance} (working state), a {@link
 * CommitPublisher} (how commits become durable: a changelog, a group commit's segment, or an async
 * upload), the {@link LineageLoader} (load and recovery), the {@link SnapshotScheduler} (which
 * snapshots are taken, and when), {@link StoreRetention} and the root's {@link SegmentSweep}.
 */
public final class VersionedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VersionedStore.class);

  private final String name;
  private final StoreLayout layout;
  private final StoreOptions options;
  private final StoreMetrics metrics;

  /** Guards the local instance, its version, the open transaction and the snapshot scheduler. */
  private final ReentrantLock lock = new ReentrantLock();

  /** One maintenance run at a time. */
  private final ReentrantLock maintenanceLock = new ReentrantLock();

  private final LocalInstance local;
  private final CommitPublisher publisher;
  private final LineageLoader loader;
  private final SnapshotHistory history;
  private final SnapshotScheduler snapshots;
  private final StoreRetention retention;
  private final SegmentSweep sweep;
  private final SnapshotReplay replay;
  private final ChangeFeed changeFeed;

  private StateTransaction openTransaction;

  /** Written under the lock; read without it by uploads, which stop once it is set. */
  private volatile boolean closed;

  /** Wired by {@link VersionedStoreBuilder#open()}. */
  VersionedStore(VersionedStoreBuilder.Parts parts) {
    this.name = parts.name();
    this.layout = parts.layout();
    this.options = parts.options();
    this.metrics = parts.metrics();
    this.local = parts.local();
    this.publisher = parts.publisher();
    this.loader = parts.loader();
    this.history = parts.history();
    this.retention = parts.retention();
    this.sweep = parts.sweep();
    this.replay = parts.replay();
    this.changeFeed = parts.changeFeed();
    this.snapshots =
        new SnapshotScheduler(
            name,
            lock,
            local,
            history,
            parts.uploader(),
            options,
            metrics,
            () -> closed,
            this::settleDeferredCommit,
            parts.background());
  }

  /**
   * Under the lock, before the local instance's newest version is used as durable (a load, a
   * snapshot, a close): makes the last commit durable if it returned before it was (a group
   * commit's deferred member, docs/protocol.md "Group commit"). If it is not durable, or not known
   * to be, the local instance goes, as after any failed commit: the next load restores from durable
   * storage.
   */
  private void settleDeferredCommit() {
    try {
      publisher.awaitDeferred();
    } catch (RuntimeException e) {
      LOG.warn(
          "Store {}: version {} returned from its commit before it was durable, and its group"
              + " commit failed; the next load restores from durable storage",
          name,
          local.version(),
          e);
      local.discard();
    }
  }

  /**
   * A builder of a store named {@code name} (how messages name it, for example {@code op=0/part=3})
   * whose durable files live in {@code storage}.
   */
  public static VersionedStoreBuilder builder(String name, Storage storage) {
    return new VersionedStoreBuilder(name, storage);
  }

  public String name() {
    return name;
  }

  public StoreLayout layout() {
    return layout;
  }

  public StoreMetrics metrics() {
    return metrics;
  }

  /** The version the local instance holds, or -1 if none. */
  public long localVersion() {
    lock.lock();
    try {
      return local.version();
    } finally {
      lock.unlock();
    }
  }

  /** The newest snapshot this instance wrote or restored, or -1. */
  public long lastSnapshotVersion() {
    return history.last();
  }

  /** The newest snapshot this instance published itself (not one it restored), or -1. */
  public long lastPublishedSnapshotVersion() {
    return history.lastPublished();
  }

  /** Estimated number of keys in the local instance (RocksDB's estimate). */
  public long estimateKeys() {
    lock.lock();
    try {
      return local.estimateKeys();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Loads {@code version} and opens a transaction on it. Version 0 is the empty state. Reads
   * nothing durable when the local instance holds the version (warm path); replays changelogs when
   * it holds an older one; otherwise restores the newest valid snapshot at or below the version and
   * replays the changelogs after it.
   *
   * @throws IllegalStateException a transaction is open
   * @throws MissingFileException a file the version needs is absent
   * @throws CorruptFileException a changelog the version needs does not verify
   */
  public StateTransaction begin(long version) {
    return begin(version, OptionalLong.empty());
  }

  /**
   * Loads commit {@code commitId} of {@code version} exactly, when present, and opens a transaction
   * on it; otherwise as {@link #begin(long)}. With an id, a local instance holding another commit
   * of the version is not used: versions that Spark's commit log names by commit id (checkpoint
   * format v2) load that commit's lineage and no other. The empty state, version 0, is commit 0.
   *
   * @throws IllegalStateException a transaction is open
   * @throws MissingFileException the commit, or a file its lineage needs, is absent
   * @throws CorruptFileException a changelog the lineage needs does not verify
   */
  public StateTransaction begin(long version, OptionalLong commitId) {
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0: " + version);
    }
    lock.lock();
    try {
      checkNotClosed();
      checkNoOpenTransaction();
      settleDeferredCommit();
      // l1: warm, or l2-l5 from durable files.
      if (commitId.isPresent()
          ? local.holds(version, commitId.getAsLong())
          : local.holds(version)) {
        metrics.countWarmLoad();
        // Every batch of every partition: DEBUG; a load from durable storage logs at INFO.
        LOG.debug("Store {}: version {} is held locally (warm load)", name, version);
      } else {
        long held = local.version();
        long start = System.nanoTime();
        try {
          loader.load(version, commitId);
        } finally {
          metrics.countDurableLoad(held, version, System.nanoTime() - start);
        }
      }
      openTransaction = new StateTransaction(this, local.db(), version, local.commitId(), false);
      publisher.announce(version + 1); // g1
      return openTransaction;
    } catch (RuntimeException e) {
      // A failed load leaves no half-built instance behind.
      if (openTransaction == null) {
        local.discard();
      }
      throw e;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Opens a transaction at {@code version} on an empty state, reading nothing durable: what it puts
   * replaces everything before (offline state rewrites, such as Spark's repartitioning, which
   * rewrite every row of a store). Its commit publishes version {@code version + 1} whole, as a
   * snapshot written before the commit returns, not as a changelog: a changelog of it would name a
   * parent no durable commit holds (docs/protocol.md, "Empty base").
   *
   * @throws IllegalStateException a transaction is open
   */
  public StateTransaction beginEmpty(long version) {
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0: " + version);
    }
    lock.lock();
    try {
      checkNotClosed();
      checkNoOpenTransaction();
      settleDeferredCommit();
      local.openEmptyAt(version);
      // Not announced to group commit: its commit publishes no changelog.
      openTransaction = new StateTransaction(this, local.db(), version, 0, true);
      return openTransaction;
    } catch (RuntimeException e) {
      local.discard();
      throw e;
    } finally {
      lock.unlock();
    }
  }

  /**
   * Loads {@code endVersion} from the snapshot of exactly {@code snapshotVersion} (0: the empty
   * state) on its lineage, replaying the changelogs after it, and opens a transaction on it
   * (docs/protocol.md, "Replay from a snapshot"). Where {@link #begin} takes any base, this one
   * fails if that snapshot is absent or unusable.
   *
   * @throws IllegalStateException a transaction is open
   * @throws IllegalArgumentException {@code snapshotVersion < 0} or {@code endVersion <
   *     snapshotVersion}
   * @throws io.streamstate.core.error.StreamStateException no snapshot of {@code snapshotVersion}
   *     lies on the lineage of {@code endVersion}
   * @throws MissingFileException a file the replay needs is absent
   * @throws CorruptFileException a file the replay needs does not verify
   */
  public StateTransaction beginFromSnapshot(long snapshotVersion, long endVersion) {
    return beginFromSnapshot(snapshotVersion, endVersion, OptionalLong.empty());
  }

  /**
   * As {@link #beginFromSnapshot(long, long)}, on the lineage of commit {@code endCommit} of {@code
   * endVersion} when present (checkpoint format v2).
   */
  public StateTransaction beginFromSnapshot(
      long snapshotVersion, long endVersion, OptionalLong endCommit) {
    lock.lock();
    try {
      checkNotClosed();
      checkNoOpenTransaction();
      settleDeferredCommit();
      try {
        replay.replay(snapshotVersion, endVersion, endCommit);
      } catch (RuntimeException e) {
        local.discard(); // no half-built instance
        throw e;
      }
      // Warm now (begin counts a warm load); the lock is reentrant: nothing ran in between.
      return begin(endVersion, endCommit);
    } finally {
      lock.unlock();
    }
  }

  /**
   * The changes of versions {@code startVersion} to {@code endVersion} on the lineage of {@code
   * endVersion}, one changelog per version, oldest first (docs/protocol.md, "Change feed"). Reads
   * durable files only; safe to call with a transaction open.
   *
   * @throws IllegalArgumentException {@code startVersion < 1} or {@code endVersion < startVersion}
   * @throws MissingFileException a changelog of the range is absent
   * @throws CorruptFileException a changelog of the range does not verify
   */
  public CloseableIterator<Changelog> readChanges(long startVersion, long endVersion) {
    return readChanges(startVersion, endVersion, OptionalLong.empty());
  }

  /**
   * As {@link #readChanges(long, long)}, on the lineage of commit {@code endCommit} of {@code
   * endVersion} when present (checkpoint format v2).
   */
  public CloseableIterator<Changelog> readChanges(
      long startVersion, long endVersion, OptionalLong endCommit) {
    checkNotClosed();
    return changeFeed.read(startVersion, endVersion, endCommit);
  }

  // ---------------------------------------------------------------------------------------------
  // Commit (docs/protocol.md, "Commit")

  /** What a commit made: the new version and its commit id. */
  record Committed(long version, long commitId) {}

  Committed commit(StateTransaction tx) {
    if (tx.startsEmpty()) {
      return commitWhole(tx);
    }
    lock.lock();
    try {
      checkNotClosed();
      if (tx != openTransaction) {
        throw new IllegalStateException("Transaction of store " + name + " is not the open one");
      }
      long start = System.nanoTime();
      long newVersion = tx.version() + 1;
      long commitId = CommitIds.next();
      long parentId = local.commitId();
      // c1: the changes as one changelog, naming the commit it builds on.
      Changelog changelog = tx.toChangelog(newVersion, commitId, parentId);
      // c3 starts now, beside c1's encoding and c2: the local apply and the durable write each
      // take a share of a large commit's time, and neither needs the other's result. The lock
      // keeps every other user of the local instance out until the apply is joined below (an
      // apply returns once the heap mirrors, if any, have the version; LocalDb makes every later
      // use of RocksDB wait for the RocksDB write that follows).
      CompletableFuture<Void> applied =
          CompletableFuture.runAsync(() -> local.apply(changelog), LocalApplyPool.EXECUTOR);
      PublishedCommit published;
      try {
        // Compressed here, on the committing thread: in a group commit each member is compressed
        // by its own task, in parallel, before it joins.
        byte[] payload = changelog.encodeStored(options.changelogCodec());
        // c2: publish it under an attempt-unique name (I2): the one durable step, before anything
        // refers to it (I4). In async durability the upload is queued instead.
        published = publisher.publish(new EncodedCommit(newVersion, commitId, parentId, payload));
      } catch (RuntimeException | Error e) {
        // Not published (or not known to be): the local instance holds changes no durable commit
        // has, so it goes; the next load restores version tx.version() from durable storage.
        awaitQuietly(applied);
        local.discard();
        throw e;
      }
      metrics.countPublished(published);
      // c3 joined. Durable state is the truth: a local failure now only costs a restore.
      try {
        applied.join();
        local.forgetOldestBeyond(RetentionPlanner.lineageToKeep(options));
      } catch (CompletionException e) {
        LOG.warn(
            "Store {}: version {} is durable but applying it locally failed; the next load"
                + " restores from durable storage",
            name,
            newVersion,
            e.getCause());
        local.discard();
      }
      openTransaction = null;
      metrics.countCommit(
          System.nanoTime() - start, published.commitBytes(), changelog.changeCount());
      snapshots.afterCommit(newVersion);
      return new Committed(newVersion, commitId);
    } finally {
      publisher.withdraw();
      lock.unlock();
    }
  }

  /** Waits for a local apply whose result no longer matters (its instance is discarded next). */
  private static void awaitQuietly(CompletableFuture<Void> applied) {
    boolean interrupted = false;
    while (true) {
      try {
        applied.get();
        break;
      } catch (InterruptedException e) {
        interrupted = true; // the apply is still using the instance: wait for it regardless
      } catch (ExecutionException e) {
        break;
      }
    }
    if (interrupted) {
      Thread.currentThread().interrupt();
    }
  }

  /**
   * The commit of a transaction that started empty: applied locally, then published as a snapshot
   * of the new version in this thread; the commit returns once the snapshot's manifest is durable.
   * If the snapshot fails, nothing names the new version (at most unreferenced files, which
   * retention deletes) and the local instance is dropped.
   */
  private Committed commitWhole(StateTransaction tx) {
    // Maintenance first, then the store's lock: the order snapshots take them in.
    maintenanceLock.lock();
    try {
      long start = System.nanoTime();
      long newVersion = tx.version() + 1;
      long commitId = CommitIds.next();
      Changelog changes;
      lock.lock();
      try {
        checkNotClosed();
        if (tx != openTransaction) {
          throw new IllegalStateException("Transaction of store " + name + " is not the open one");
        }
        changes = tx.toChangelog(newVersion, commitId, local.commitId());
        try {
          local.apply(changes);
        } catch (RuntimeException e) {
          local.discard(); // applied in pieces: no half-applied instance stays behind
          throw e;
        }
        openTransaction = null;
      } finally {
        lock.unlock();
      }
      long published;
      try {
        published = snapshots.snapshotNow();
      } catch (RuntimeException e) {
        discardLocal();
        throw e;
      }
      if (published != newVersion) {
        discardLocal();
        throw new IllegalStateException(
            "Store "
                + name
                + ": version "
                + newVersion
                + ", written from an empty state, could not be published as a snapshot"
                + (closed ? " (the store closed)" : " (snapshot " + published + " instead)"));
      }
      metrics.countCommit(System.nanoTime() - start, 0, changes.changeCount());
      return new Committed(newVersion, commitId);
    } finally {
      maintenanceLock.unlock();
    }
  }

  /** Called under the lock: one transaction at a time. */
  private void checkNoOpenTransaction() {
    if (openTransaction != null) {
      throw new IllegalStateException(
          "Store "
              + name
              + " already has an open transaction at version "
              + openTransaction.version());
    }
  }

  private void discardLocal() {
    lock.lock();
    try {
      local.discard();
    } finally {
      lock.unlock();
    }
  }

  /**
   * Declares whether the open transaction may still commit: a read-only use withdraws it from group
   * commit, so that other stores' segments do not wait for it.
   */
  void expectCommit(StateTransaction tx, boolean mayCommit) {
    lock.lock();
    try {
      if (tx != openTransaction || tx.startsEmpty()) {
        return;
      }
      if (mayCommit) {
        publisher.announce(tx.version() + 1);
      } else {
        publisher.withdraw();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Releases the open transaction without committing. */
  void release(StateTransaction tx) {
    lock.lock();
    try {
      if (openTransaction == tx) {
        openTransaction = null;
        publisher.withdraw();
        if (tx.startsEmpty()) {
          local.discard(); // its empty base is no version's state
        }
      }
    } finally {
      lock.unlock();
    }
  }

  /** Versions committed locally but not yet durable (0 in sync durability). */
  public int uploadLag() {
    return publisher.pending();
  }

  // ---------------------------------------------------------------------------------------------
  // Maintenance (docs/protocol.md, "Snapshot" and "Retention")

  /** What one maintenance run did. */
  public record MaintenanceResult(long snapshotVersion, int filesDeleted) {}

  /** Snapshots if due, then applies retention. Safe to call concurrently with transactions. */
  public MaintenanceResult maintain() {
    maintenanceLock.lock();
    try {
      long snapshot = snapshotIfDue();
      int deleted = applyRetention();
      // Segments are shared by stores: one sweep per storage root per process, now and then.
      deleted += sweep.maybeSweep(options);
      return new MaintenanceResult(snapshot, deleted);
    } finally {
      maintenanceLock.unlock();
    }
  }

  /**
   * Writes a snapshot of the local instance if it is at least {@code snapshotInterval} versions
   * past the last one. Skipped while a snapshot of this store is uploading in the background (it is
   * the snapshot this one would have been, or newer).
   *
   * @return the version snapshotted, or -1
   */
  public long snapshotIfDue() {
    maintenanceLock.lock();
    try {
      return snapshots.snapshotIfDue();
    } finally {
      maintenanceLock.unlock();
    }
  }

  /**
   * Writes a snapshot of the local instance now, whatever the interval, in the calling thread;
   * first waits for a background upload of this store to end. Returns its version, or -1 if the
   * local version has a snapshot already.
   */
  public long snapshotNow() {
    maintenanceLock.lock();
    try {
      return snapshots.snapshotNow();
    } finally {
      maintenanceLock.unlock();
    }
  }

  /**
   * Snapshots {@code version}, just committed, without waiting for storage (a snapshot Spark's
   * coordinator asked for at commit): takes the local checkpoint now, in the calling thread, so
   * that it holds exactly that version, and uploads it on the process's pool of background snapshot
   * uploads (docs/protocol.md, "Forced snapshot").
   *
   * <p>One upload per store at a time: while one is running (in the background or in maintenance)
   * the request joins it, and once it ends, a snapshot of the then newest local version follows
   * unless the one that ended covers {@code version}. So later requests coalesce, and a background
   * snapshot and maintenance never upload the same version.
   *
   * <p>Never throws for a failed snapshot: a failure is logged at WARN, counted in {@code
   * snapshotFailures}, and completes the future exceptionally; the committed version stays durable
   * in its changelog.
   *
   * @return completes with the version of the snapshot published (or an existing one at or above
   *     {@code version}) once its manifest is durable, or with -1 if there is nothing to snapshot
   *     (the local instance no longer holds {@code version}) or the store closed first
   */
  public CompletableFuture<Long> snapshotInBackground(long version) {
    return snapshots.snapshotInBackground(version);
  }

  /**
   * Deletes what loading none of the newest {@code minVersionsToRetain} versions needs. Runs only
   * on an instance whose local instance holds the newest version, whose lineage it keeps loadable.
   *
   * @return the number of files deleted
   */
  public int applyRetention() {
    maintenanceLock.lock();
    try {
      long version;
      NavigableMap<Long, Long> lineage;
      lock.lock();
      try {
        if (closed || !local.isOpen()) {
          return 0;
        }
        version = local.version();
        lineage = local.lineage();
      } finally {
        lock.unlock();
      }
      StoreRetention.Outcome outcome = retention.run(version, lineage, snapshots::isUploading);
      if (outcome.base() >= 0) {
        lock.lock();
        try {
          local.forgetLineageBelow(outcome.base());
        } finally {
          lock.unlock();
        }
      }
      return outcome.deleted();
    } finally {
      maintenanceLock.unlock();
    }
  }

  /**
   * Waits, at most {@code timeout}, for this store's running snapshot upload and a replay-debt
   * snapshot queued to start; call before {@link #close()} at a clean stop, so that the next load
   * starts from that snapshot instead of replaying the changes it covers. Commits may continue
   * meanwhile; a snapshot they ask for is waited for too, within the same time.
   *
   * @return whether no upload runs or waits now
   */
  public boolean awaitSnapshotUploads(Duration timeout) {
    return snapshots.awaitUploads(timeout);
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Frees the local instance and deletes the local directory; starts no durable write. A snapshot
   * uploading in the background is not waited for: it starts no further file and publishes no
   * manifest, so what it uploaded stays unreferenced (retention's once older than {@code
   * tornFileGraceMillis}); {@link #awaitSnapshotUploads} first lets it publish. A create already
   * running cannot be called back and ends on its own (a manifest create that completes is a
   * complete snapshot; an incomplete file never verifies); the checkpoint directory it reads from,
   * and then the local directory, are deleted when it ends. Background snapshot requests still
   * waiting complete with -1. Async durability waits up to 30 s for pending changelog uploads.
   */
  @Override
  public void close() {
    List<CompletableFuture<Long>> waiters;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      settleDeferredCommit();
      closed = true;
      waiters = snapshots.close();
      openTransaction = null;
      publisher.close();
      local.close();
    } finally {
      lock.unlock();
    }
    waiters.forEach(w -> w.complete(-1L));
  }

  private void checkNotClosed() {
    if (closed) {
      throw new IllegalStateException("Store " + name + " is closed");
    }
  }
}
