package io.streamstate.core.engine;

import io.streamstate.core.engine.SnapshotUploader.LocalCheckpoint;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One partition of versioned state: a local RocksDB instance (the working state) over durable
 * changelogs and snapshots (see {@code docs/protocol.md} for every step).
 *
 * <ul>
 *   <li>{@link #begin(long)} loads a version; warm when the local instance holds it already.
 *   <li>{@link StateTransaction#commit()} publishes one changelog with create-if-absent, then
 *       applies the batch locally.
 *   <li>{@link #maintain()} snapshots and applies retention; never called on the commit path.
 * </ul>
 *
 * <p>One transaction at a time; {@code maintain()} may run concurrently from another thread, and
 * {@link #snapshotInBackground} uploads on a pool of its own. {@link #close()} frees local
 * resources and writes nothing durable, so closing is also how a test simulates a crash.
 */
public final class VersionedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VersionedStore.class);

  private final String name;
  private final Storage storage;
  private final StoreLayout layout;
  private final Path localDir;
  private final StoreOptions options;
  private final RocksDbMemoryBudget budget;
  private final HedgedWriter hedger;
  private final StoreMetrics metrics = new StoreMetrics();

  /** Groups this store's sync commits with other stores' into segments; null: one file each. */
  private final GroupCommitter groupCommitter;

  /** The group-commit ticket of the open transaction, if it may commit. */
  private GroupCommitter.Ticket ticket;

  /** Background uploads in {@code async} durability; null in {@code sync}. */
  private final AsyncUploads uploads;

  /**
   * Async stores of this process by durable location, so that a new instance of a store (a
   * restarted query, a partition moved back) first lets an older instance's pending uploads land
   * instead of resuming from an older version while they are still on their way.
   */
  private static final java.util.concurrent.ConcurrentMap<String, AsyncUploads> ASYNC_BY_LOCATION =
      new java.util.concurrent.ConcurrentHashMap<>();

  /** How long {@link #close()} waits for pending async uploads. */
  private static final long CLOSE_FLUSH_MILLIS = 30_000;

  /** Guards the local instance, its version and the open transaction. */
  private final ReentrantLock lock = new ReentrantLock();

  /** One maintenance run at a time. */
  private final ReentrantLock maintenanceLock = new ReentrantLock();

  private LocalDb db;
  private long localVersion = -1;

  /** The commit id of {@link #localVersion} (0 for the empty state). */
  private long localId;

  /**
   * The commit ids of the versions on the local instance's lineage that this instance loaded or
   * committed, so retention keeps exactly the snapshots that lineage stands on.
   */
  private final NavigableMap<Long, Long> lineage = new TreeMap<>();

  private int generation;
  private StateTransaction openTransaction;
  private volatile long lastSnapshotVersion = -1;

  /** Versions of the snapshots this instance wrote or restored (retention's hint). */
  private final java.util.concurrent.ConcurrentSkipListSet<Long> snapshotsSeen =
      new java.util.concurrent.ConcurrentSkipListSet<>();

  /** Whether retention listed this store once; the base it chose last (guarded by maintenance). */
  private boolean retentionRan;

  private long retentionBase = -1;

  /** SSTs of the local instance known to be in a published manifest: local name to shared name. */
  private Map<String, String> confirmedSsts = Map.of();

  /** Uploads snapshots: SSTs and manifest, hedged (s2, s3). */
  private final SnapshotUploader uploader;

  /** Whether a snapshot of this store is uploading (in the background or in maintenance). */
  private boolean snapshotUploading;

  /** Background requests that joined the running upload, and the newest version they asked. */
  private List<CompletableFuture<Long>> snapshotWaiters = new ArrayList<>();

  private long snapshotRequested = -1;

  /** Signalled when an upload ends. */
  private final Condition snapshotEnded = lock.newCondition();

  /** Scratch directories of local checkpoints start with this (in {@link #localDir}). */
  private static final String CHECKPOINT_DIR_PREFIX = "checkpoint-";

  /** Written under the lock; read without it by uploads, which stop once it is set. */
  private volatile boolean closed;

  private VersionedStore(
      String name,
      Storage storage,
      String prefix,
      Path localDir,
      StoreOptions options,
      RocksDbMemoryBudget budget,
      HedgedWriter hedger,
      GroupCommitter groupCommitter) {
    if (groupCommitter != null && groupCommitter.storage() != storage) {
      throw new IllegalArgumentException(
          "Store " + name + ": its group committer writes to another storage");
    }
    this.name = name;
    this.groupCommitter = options.isAsync() ? null : groupCommitter;
    this.storage = storage;
    this.layout = new StoreLayout(prefix);
    this.localDir = localDir;
    this.options = options;
    this.budget = budget;
    this.hedger = hedger;
    // Snapshot files are larger and rarer than commits: their own latencies and budget.
    this.uploader =
        new SnapshotUploader(
            name, storage, layout, options, hedger == null ? null : hedger.companion(), metrics);
    this.uploads =
        options.isAsync()
            ? new AsyncUploads(name, options.asyncMaxLagVersions(), this::publishAsync)
            : null;
  }

  private String durableLocation() {
    return FramedFile.location(storage, layout.prefix());
  }

  /**
   * Opens a store. Nothing is read until the first {@link #begin}. {@code localDir} belongs to this
   * store alone: whatever it holds is deleted, since a local instance is never trusted across
   * instances (its WAL is off).
   *
   * @param name how messages name the store (for example {@code op=0/part=3})
   * @param prefix the store's prefix in {@code storage}: empty or ending with {@code /}
   */
  public static VersionedStore open(
      String name,
      Storage storage,
      String prefix,
      Path localDir,
      StoreOptions options,
      RocksDbMemoryBudget budget) {
    return open(name, storage, prefix, localDir, options, budget, null);
  }

  /**
   * Opens a store whose changelog writes are hedged by {@code hedger} (shared by the stores of a
   * process; null for plain writes): a write slower than the hedger's deadline is written again
   * under the commit's alternate name, and the first copy to complete commits the version.
   */
  public static VersionedStore open(
      String name,
      Storage storage,
      String prefix,
      Path localDir,
      StoreOptions options,
      RocksDbMemoryBudget budget,
      HedgedWriter hedger) {
    return open(name, storage, prefix, localDir, options, budget, hedger, null);
  }

  /**
   * Opens a store whose sync commits go through {@code groupCommitter} (shared by the stores of a
   * storage root in a process; null for one changelog per commit): commits that stores make
   * together are published as one segment (docs/protocol.md, "Group commit"). Async stores ignore
   * it.
   */
  public static VersionedStore open(
      String name,
      Storage storage,
      String prefix,
      Path localDir,
      StoreOptions options,
      RocksDbMemoryBudget budget,
      HedgedWriter hedger,
      GroupCommitter groupCommitter) {
    deleteRecursively(localDir);
    try {
      Files.createDirectories(localDir);
    } catch (IOException e) {
      throw new StreamStateException("Cannot create local directory " + localDir + ": " + e, e);
    }
    return new VersionedStore(
        name, storage, prefix, localDir, options, budget, hedger, groupCommitter);
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
      return localVersion;
    } finally {
      lock.unlock();
    }
  }

  /** The newest snapshot this instance wrote or restored, or -1. */
  public long lastSnapshotVersion() {
    return lastSnapshotVersion;
  }

  /** Estimated number of keys in the local instance (RocksDB's estimate). */
  public long estimateKeys() {
    lock.lock();
    try {
      return db == null ? 0 : db.estimateKeys();
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
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0: " + version);
    }
    lock.lock();
    try {
      checkNotClosed();
      if (openTransaction != null) {
        throw new IllegalStateException(
            "Store "
                + name
                + " already has an open transaction at version "
                + openTransaction.version());
      }
      if (db != null && localVersion == version) {
        metrics.warmLoads.incrementAndGet();
      } else {
        metrics.durableLoads.incrementAndGet();
        load(version);
      }
      openTransaction = new StateTransaction(this, db, version);
      if (groupCommitter != null) {
        ticket = groupCommitter.expect(version + 1);
      }
      return openTransaction;
    } catch (RuntimeException e) {
      // A failed load leaves no half-built instance behind.
      if (openTransaction == null) {
        discardLocal();
      }
      throw e;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Commit (docs/protocol.md, "Commit")

  long commit(StateTransaction tx) {
    lock.lock();
    try {
      checkNotClosed();
      if (tx != openTransaction) {
        throw new IllegalStateException("Transaction of store " + name + " is not the open one");
      }
      long start = System.nanoTime();
      long newVersion = tx.version() + 1;
      long commitId = CommitIds.next();
      // c1: the changes as one changelog payload, naming the commit it builds on.
      Changelog changelog = tx.toChangelog(newVersion, commitId, localId);
      // Compressed here, on the committing thread: in a group commit each member is compressed by
      // its own task, in parallel, before it joins.
      byte[] payload = changelog.encodeStored(options.changelogCodec());
      // c2: publish it under an attempt-unique name: the one durable step. In async durability
      // the upload is queued instead (and this waits while the lag is at its maximum).
      long written;
      if (ticket != null) {
        GroupCommitter.Ticket t = ticket;
        ticket = null;
        written = publishInSegment(t, commitId, payload);
      } else if (uploads != null) {
        ASYNC_BY_LOCATION.put(durableLocation(), uploads);
        uploads.submit(new AsyncUploads.Pending(newVersion, commitId, payload));
        written = payload.length + FramedFile.HEADER_LENGTH + FramedFile.FOOTER_LENGTH;
      } else {
        written = publishChangelog(newVersion, commitId, payload);
      }
      // c3: apply locally. Durable state is the truth: a local failure now only costs a restore.
      try {
        db.apply(changelog);
        localVersion = newVersion;
        localId = commitId;
        lineage.put(newVersion, commitId);
        // Retention only needs the ids of versions near its base; forgetting older ones only
        // makes it keep more.
        if (lineage.size() > options.minVersionsToRetain() + 4L * options.snapshotInterval() + 16) {
          lineage.pollFirstEntry();
        }
      } catch (RuntimeException e) {
        LOG.warn(
            "Store {}: version {} is durable but applying it locally failed; the next load"
                + " restores from durable storage",
            name,
            newVersion,
            e);
        discardLocal();
      }
      openTransaction = null;
      long nanos = System.nanoTime() - start;
      metrics.commits.incrementAndGet();
      metrics.commitNanosTotal.addAndGet(nanos);
      metrics.lastCommitNanos.set(nanos);
      metrics.lastCommitBytes.set(written);
      metrics.lastCommitChanges.set(changelog.changeCount());
      return newVersion;
    } finally {
      withdrawTicket();
      lock.unlock();
    }
  }

  /** Withdraws the open transaction's group-commit ticket, if any (it will not commit now). */
  private void withdrawTicket() {
    if (ticket != null) {
      groupCommitter.withdraw(ticket);
      ticket = null;
    }
  }

  /**
   * Declares whether the open transaction may still commit: a read-only use withdraws it from group
   * commit, so that other stores' segments do not wait for it.
   */
  void expectCommit(StateTransaction tx, boolean mayCommit) {
    lock.lock();
    try {
      if (tx != openTransaction || groupCommitter == null) {
        return;
      }
      if (!mayCommit) {
        withdrawTicket();
      } else if (ticket == null) {
        ticket = groupCommitter.expect(tx.version() + 1);
      }
    } finally {
      lock.unlock();
    }
  }

  /** Publishes this commit as a member of a group commit's segment; returns the bytes written. */
  private long publishInSegment(GroupCommitter.Ticket t, long commitId, byte[] payload) {
    GroupCommitter.Result result =
        groupCommitter.commit(t, new Segment.Member(layout.prefix(), commitId, localId, payload));
    metrics.segmentCommits.incrementAndGet();
    // The segment's files count once, for the member whose thread wrote them.
    if (result.wroteIt()) {
      metrics.filesWritten.incrementAndGet();
      metrics.segmentsWritten.incrementAndGet();
      HedgedPublish published = result.published();
      if (published != null && published.hedgeFired()) {
        metrics.hedgesFired.incrementAndGet();
        metrics.filesWritten.incrementAndGet();
        if (published.hedgeWon()) {
          metrics.hedgesWon.incrementAndGet();
        }
      }
    }
    long bytes = payload.length;
    metrics.bytesWritten.addAndGet(bytes);
    return bytes;
  }

  /** Releases the open transaction without committing. */
  void release(StateTransaction tx) {
    lock.lock();
    try {
      if (openTransaction == tx) {
        openTransaction = null;
        withdrawTicket();
      }
    } finally {
      lock.unlock();
    }
  }

  /** Publishes the changelog of {@code version}; returns the bytes written. */
  private long publishChangelog(long version, long commitId, byte[] payload) {
    String file = layout.changelog(version, commitId);
    try {
      if (hedger != null && hedger.policy().isEnabled()) {
        HedgedPublish published =
            hedger.publish(
                storage,
                file,
                layout.hedgeChangelog(version, commitId),
                FramedFile.frame(FileKind.CHANGELOG, payload));
        if (published.hedgeFired()) {
          metrics.hedgesFired.incrementAndGet();
          metrics.filesWritten.incrementAndGet(); // the second copy, deleted once it loses
          metrics.bytesWritten.addAndGet(
              payload.length + FramedFile.HEADER_LENGTH + FramedFile.FOOTER_LENGTH);
        }
        if (published.hedgeWon()) {
          metrics.hedgesWon.incrementAndGet();
        }
      } else {
        storage.create(file, FramedFile.writer(FileKind.CHANGELOG, payload));
      }
    } catch (FileAlreadyExistsException e) {
      // Commit ids are random 64-bit numbers: a clash means a broken random source or a store
      // that reports a name taken when it is not. Either way nothing of ours was published.
      throw new RetryableException(
          "Cannot commit version "
              + version
              + " of store "
              + name
              + ": the attempt-unique name "
              + FramedFile.location(storage, file)
              + " is taken",
          e);
    }
    long bytes = payload.length + FramedFile.HEADER_LENGTH + FramedFile.FOOTER_LENGTH;
    metrics.filesWritten.incrementAndGet();
    metrics.bytesWritten.addAndGet(bytes);
    return bytes;
  }

  /**
   * Uploads one changelog of an async store. A retry after an unknown outcome or a taken name first
   * reads back both names the commit may have used, and else writes the alternate name.
   */
  private void publishAsync(AsyncUploads.Pending p) {
    try {
      publishChangelog(p.version(), p.commitId(), p.payload());
      return;
    } catch (OutcomeUnknownException | RetryableException e) {
      if (e instanceof RetryableException
          && !(e.getCause() instanceof FileAlreadyExistsException)) {
        throw e; // nothing published: the uploader retries
      }
    }
    String primary = layout.changelog(p.version(), p.commitId());
    String alternate = layout.hedgeChangelog(p.version(), p.commitId());
    for (String file : List.of(primary, alternate)) {
      try {
        if (Arrays.equals(FramedFile.readPayload(storage, file, FileKind.CHANGELOG), p.payload())) {
          return; // an earlier try did publish it
        }
      } catch (CorruptFileException | MissingFileException absent) {
        // not there whole: try the next name
      }
    }
    try {
      storage.create(alternate, FramedFile.writer(FileKind.CHANGELOG, p.payload()));
      metrics.filesWritten.incrementAndGet();
    } catch (FileAlreadyExistsException taken) {
      throw new RetryableException(
          "Store "
              + name
              + ": both names of version "
              + p.version()
              + " hold incomplete copies ("
              + FramedFile.location(storage, primary)
              + "); retrying",
          taken);
    }
  }

  /** Versions committed locally but not yet durable (0 in sync durability). */
  public int uploadLag() {
    return uploads == null ? 0 : uploads.pending();
  }

  // ---------------------------------------------------------------------------------------------
  // Load and recovery (docs/protocol.md, "Load and recovery")

  /**
   * One candidate commit of this store: a changelog file, or this store's member of a segment
   * ({@code file} is then the segment's name).
   */
  private record Candidate(
      String file, long version, long commitId, boolean hedge, long mtime, boolean inSegment) {}

  /**
   * The durable files of this store by version: changelogs and segment names listed at once,
   * segment indexes read per version when a load reaches it, snapshots listed on demand.
   */
  private final class Listing {
    private final NavigableMap<Long, List<FileInfo>> changelogs;
    private final NavigableMap<Long, List<SegmentCatalog.SegmentFile>> segments;
    private final Map<Long, List<Candidate>> candidates = new HashMap<>();
    private final List<String> unreadableSegments = new ArrayList<>();
    private NavigableMap<Long, List<StoreLayout.SnapshotName>> snapshots;

    Listing(
        NavigableMap<Long, List<FileInfo>> changelogs,
        NavigableMap<Long, List<SegmentCatalog.SegmentFile>> segments) {
      this.changelogs = changelogs;
      this.segments = segments;
    }

    /** Every commit of {@code version} found: changelog files, then segment members. */
    List<Candidate> candidates(long version) {
      return candidates.computeIfAbsent(
          version,
          v -> {
            List<Candidate> found = new ArrayList<>();
            for (FileInfo f : changelogs.getOrDefault(v, List.of())) {
              StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
              found.add(
                  new Candidate(
                      f.name(), v, n.commitId(), n.hedge(), f.lastModifiedMillis(), false));
            }
            for (SegmentCatalog.SegmentFile f : segments.getOrDefault(v, List.of())) {
              String segment = f.name().name();
              try {
                for (Segment.IndexEntry e : segmentCatalog().index(segment).entries()) {
                  if (e.storePrefix().equals(layout.prefix())) {
                    found.add(
                        new Candidate(
                            segment,
                            v,
                            e.commitId(),
                            f.name().hedge(),
                            f.lastModifiedMillis(),
                            true));
                  }
                }
              } catch (CorruptFileException | MissingFileException e) {
                // Whose commits a torn segment held is unknown: named in errors, never loaded.
                unreadableSegments.add(e.getMessage());
              }
            }
            return found;
          });
    }

    /** The newest version with a commit of this store, or null. */
    Long newestVersion() {
      Long newest = changelogs.isEmpty() ? null : changelogs.lastKey();
      for (long v : segments.descendingKeySet()) {
        if (newest != null && v <= newest) {
          break;
        }
        if (!candidates(v).isEmpty()) {
          return v;
        }
      }
      return newest;
    }

    /** Snapshot manifests by version; of one commit, the primary name before the hedge copy. */
    NavigableMap<Long, List<StoreLayout.SnapshotName>> snapshots() {
      if (snapshots == null) {
        snapshots = new TreeMap<>();
        for (FileInfo f : storage.list(layout.snapshotDir())) {
          StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(f.name());
          if (n != null) {
            snapshots.computeIfAbsent(n.version(), v -> new ArrayList<>()).add(n);
          }
        }
        snapshots
            .values()
            .forEach(l -> l.sort(Comparator.comparing(StoreLayout.SnapshotName::hedge)));
      }
      return snapshots;
    }

    /** The copies of commit {@code id} of {@code version}: primaries, then hedge copies. */
    List<Candidate> copiesOf(long version, long id) {
      List<Candidate> copies = new ArrayList<>();
      for (Candidate c : candidates(version)) {
        if (c.commitId() == id) {
          copies.add(c);
        }
      }
      copies.sort(Comparator.comparing(Candidate::hedge));
      return copies;
    }
  }

  private SegmentCatalog segmentCatalog() {
    return SegmentCatalog.of(storage);
  }

  private Listing listDurable() {
    NavigableMap<Long, List<FileInfo>> changelogs = new TreeMap<>();
    for (FileInfo f : storage.list(layout.changelogDir())) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null) {
        changelogs.computeIfAbsent(n.version(), v -> new ArrayList<>()).add(f);
      }
    }
    return new Listing(changelogs, segmentCatalog().list());
  }

  /**
   * One commit on the lineage being loaded; {@code changelog} is null once dropped to save memory.
   */
  private static final class Step {
    final Candidate source;
    final long version;
    final long commitId;
    Changelog changelog;

    Step(Candidate source, Changelog changelog) {
      this.source = source;
      this.version = source.version();
      this.commitId = source.commitId();
      this.changelog = changelog;
    }
  }

  /** Changelogs a load keeps in memory while it walks back to its base; beyond this it re-reads. */
  private static final long MAX_HELD_CHANGELOG_BYTES = 64L << 20;

  /**
   * Loads {@code version} from durable files (l2 and l3): picks the version's newest valid commit,
   * walks back along its lineage (each changelog names its parent's commit id) to a base (the local
   * instance when it lies on the lineage, else the newest usable snapshot on it, else the empty
   * state), then replays the lineage's changelogs on the base.
   */
  private void load(long version) {
    load(version, true);
  }

  private void load(long version, boolean mayWaitForOtherUploads) {
    if (version == 0) {
      discardLocal();
      openFreshLocal();
      localVersion = 0;
      localId = 0;
      lineage.put(0L, 0L);
      return;
    }
    Listing listing = listDurable();
    List<Step> steps = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    long heldBytes = 0;
    long v;
    long expected;
    Step top = newestValidCommit(listing, version, skipped);
    if (top != null) {
      // The walk starts at the version itself, so that a snapshot of this very commit is used.
      v = version;
      expected = top.commitId;
    } else {
      // No changelog of the version is left (retention keeps the base snapshot alone).
      List<StoreLayout.SnapshotName> snaps = listing.snapshots().getOrDefault(version, List.of());
      if (snaps.isEmpty()) {
        if (options.isAsync() && skipped.isEmpty()) {
          AsyncUploads older = ASYNC_BY_LOCATION.get(durableLocation());
          if (mayWaitForOtherUploads && older != null && older != uploads && older.pending() > 0) {
            // Another instance in this process is still uploading: let it land, then look again.
            older.awaitDrained(CLOSE_FLUSH_MILLIS);
            load(version, false);
            return;
          }
          resumeFromNewestDurable(version, listing);
          return;
        }
        throw noCommitOf(version, listing, skipped);
      }
      v = version;
      expected = snaps.get(snaps.size() - 1).commitId();
    }
    // Walk back until a base on the lineage: the local instance, a usable snapshot, or empty.
    while (true) {
      if (db != null && localVersion == v && localId == expected) {
        break; // l2: the local instance lies on the lineage: replay forward from it
      }
      if (v == 0) {
        if (expected != 0) {
          throw new CorruptFileException(
              "Cannot load version "
                  + version
                  + " of store "
                  + name
                  + ": the changelog of version 1 on its lineage names parent commit "
                  + StoreLayout.formatId(expected)
                  + " instead of the empty state ("
                  + FramedFile.location(storage, steps.get(steps.size() - 1).source.file())
                  + ")");
        }
        discardLocal();
        openFreshLocal();
        localVersion = 0;
        localId = 0;
        lineage.put(0L, 0L);
        break;
      }
      // While the local instance is older, it is the base to reach: no need for snapshots.
      boolean localAhead = db != null && localVersion >= 0 && localVersion < v;
      if (!localAhead && restoreSnapshotOnLineage(listing, v, expected, skipped)) {
        break;
      }
      if (top != null && v == version) {
        steps.add(top);
        expected = top.changelog.parentId();
        heldBytes += top.changelog.changeCount() * 64L;
        v--;
        continue;
      }
      List<Candidate> copies = listing.copiesOf(v, expected);
      if (copies.isEmpty()) {
        throw new MissingFileException(
            lineageFailure(
                version,
                "changelog "
                    + FramedFile.location(storage, layout.changelog(v, expected))
                    + " is missing (version "
                    + (v + 1)
                    + " on the lineage builds on it)",
                skipped));
      }
      Step step = readCopies(copies, skipped, version);
      steps.add(step);
      expected = step.changelog.parentId();
      heldBytes += step.changelog.changeCount() * 64L;
      if (heldBytes > MAX_HELD_CHANGELOG_BYTES) {
        step.changelog = null; // re-read when replayed
      }
      v--;
    }
    // Replay the lineage, oldest first.
    for (int i = steps.size() - 1; i >= 0; i--) {
      Step step = steps.get(i);
      Changelog changelog = step.changelog != null ? step.changelog : reread(step, version);
      db.apply(changelog);
      localVersion = step.version;
      localId = step.commitId;
      lineage.put(step.version, step.commitId);
      metrics.changelogsReplayed.incrementAndGet();
    }
  }

  /**
   * Async durability, after losing the process that held the newest versions: loads the newest
   * durable version {@code d} within the lag bound, then publishes empty changelogs for {@code d+1
   * .. version} so that the lineage says plainly what was lost, and counts and logs the loss.
   */
  private void resumeFromNewestDurable(long version, Listing listing) {
    long floor = Math.max(0, version - options.asyncMaxLagVersions());
    long durable = -1;
    for (long d = version - 1; d >= floor; d--) {
      if (d == 0 || !listing.candidates(d).isEmpty() || listing.snapshots().containsKey(d)) {
        durable = d;
        break;
      }
    }
    if (durable < 0) {
      throw new MissingFileException(
          lineageFailure(
              version,
              "no durable version within the async lag bound of "
                  + options.asyncMaxLagVersions()
                  + " versions (versions "
                  + floor
                  + " to "
                  + (version - 1)
                  + " have no changelog or snapshot in "
                  + FramedFile.location(storage, layout.changelogDir())
                  + ")",
              List.of()));
    }
    load(durable);
    long lost = version - durable;
    LOG.warn(
        "Store {}: versions {} to {} were committed in async durability but never uploaded (their"
            + " process was lost); resuming from version {}: the changes of {} batch(es) are lost",
        name,
        durable + 1,
        version,
        durable,
        lost);
    metrics.versionsLost.addAndGet(lost);
    for (long v = durable + 1; v <= version; v++) {
      long commitId = CommitIds.next();
      Changelog bridge = new Changelog(v, commitId, localId, List.of(), List.of());
      publishChangelog(v, commitId, bridge.encodeStored(options.changelogCodec()));
      db.apply(bridge);
      localVersion = v;
      localId = commitId;
      lineage.put(v, commitId);
    }
  }

  /**
   * The newest commit of {@code version} whose changelog verifies. Commits of one version are
   * alternatives (retries, speculative attempts, re-runs of the batch); the newest is the one a
   * re-run produced last, as with Spark's own providers. One that does not verify is treated as
   * absent (a crashed or still-running writer's file).
   */
  private Step newestValidCommit(Listing listing, long version, List<String> skipped) {
    List<Candidate> found = new ArrayList<>(listing.candidates(version));
    found.sort(
        Comparator.comparingLong(Candidate::mtime).thenComparing(Candidate::file).reversed());
    for (Candidate c : found) {
      try {
        return new Step(c, readCommit(c));
      } catch (CorruptFileException | MissingFileException e) {
        metrics.invalidFilesSkipped.incrementAndGet();
        skipped.add(e.getMessage());
        LOG.warn("Store {}: skipping changelog that does not verify: {}", name, e.getMessage());
      }
    }
    return null;
  }

  /** Reads the commit {@code copies} hold (one commit id: the primary, then a hedge copy). */
  private Step readCopies(List<Candidate> copies, List<String> skipped, long version) {
    List<String> failures = new ArrayList<>();
    for (Candidate copy : copies) {
      try {
        return new Step(copy, readCommit(copy));
      } catch (CorruptFileException | MissingFileException e) {
        failures.add(e.getMessage());
      }
    }
    String detail = String.join("; ", failures);
    throw new CorruptFileException(lineageFailure(version, detail, skipped));
  }

  private String lineageFailure(long version, String detail, List<String> skipped) {
    return "Cannot load version "
        + version
        + " of store "
        + name
        + ": "
        + detail
        + "."
        + (skipped.isEmpty() ? "" : " Skipped as unusable: " + String.join("; ", skipped));
  }

  /**
   * No commit of {@code version} to load: corrupt if its only changelogs do not verify, else
   * missing.
   */
  private StreamStateException noCommitOf(long version, Listing listing, List<String> skipped) {
    if (!skipped.isEmpty()) {
      return new CorruptFileException(
          lineageFailure(version, "no changelog of version " + version + " verifies", skipped));
    }
    Long newest = listing.newestVersion();
    String unreadable =
        listing.unreadableSegments.isEmpty()
            ? ""
            : "; unreadable segments (whose stores are unknown): "
                + String.join("; ", listing.unreadableSegments);
    return new MissingFileException(
        lineageFailure(
            version,
            "no valid changelog of version "
                + version
                + " in "
                + FramedFile.location(storage, layout.changelogDir())
                + " or in segments under "
                + FramedFile.location(storage, SegmentCatalog.SEGMENT_DIR)
                + (newest == null
                    ? " (they hold none of this store)"
                    : " (the newest version of this store there is " + newest + ")")
                + unreadable,
            skipped));
  }

  /** Reads one candidate commit, from its changelog file or its segment. */
  private Changelog readCommit(Candidate c) {
    if (c.inSegment()) {
      return segmentCatalog().member(c.file(), layout.prefix(), c.commitId());
    }
    return readChangelog(StoreLayout.parseChangelog(c.file()));
  }

  /** Reads and checks one changelog: it must hold the version and commit id its name says. */
  private Changelog readChangelog(StoreLayout.ChangelogName n) {
    String location = FramedFile.location(storage, n.name());
    FramedFile.Payload payload = FramedFile.read(storage, n.name(), FileKind.CHANGELOG);
    Changelog changelog =
        Changelog.decodeStored(payload.bytes(), payload.formatVersion(), location);
    checkHoldsWhatItsNameSays(
        location, n.version(), n.commitId(), changelog.version(), changelog.commitId());
    return changelog;
  }

  /** A file whose content names another version or commit than its name is corrupt. */
  private static void checkHoldsWhatItsNameSays(
      String location, long version, long commitId, long heldVersion, long heldCommitId) {
    if (heldVersion != version || heldCommitId != commitId) {
      throw new CorruptFileException(
          location
              + " is corrupt: it holds version "
              + heldVersion
              + " commit "
              + StoreLayout.formatId(heldCommitId)
              + ", not what its name says");
    }
  }

  private Changelog reread(Step step, long version) {
    try {
      return readCommit(step.source);
    } catch (CorruptFileException | MissingFileException e) {
      throw new CorruptFileException(
          lineageFailure(version, "changelog changed while loading: " + e.getMessage(), List.of()),
          e);
    }
  }

  /**
   * Restores a snapshot of version {@code v} with commit id {@code id} if one exists and is usable.
   * An unusable one is skipped (logged, listed in later errors): an older snapshot plus changelogs
   * gives the same state.
   */
  private boolean restoreSnapshotOnLineage(Listing listing, long v, long id, List<String> skipped) {
    for (StoreLayout.SnapshotName s : listing.snapshots().getOrDefault(v, List.of())) {
      if (s.commitId() != id) {
        continue;
      }
      discardLocal();
      try {
        restoreSnapshot(readManifest(s));
        lineage.put(v, id);
        return true;
      } catch (CorruptFileException | MissingFileException e) {
        LOG.warn(
            "Store {}: snapshot {} is unusable, trying an older one: {}", name, v, e.getMessage());
        skipped.add(e.getMessage());
        discardLocal();
      }
    }
    return false;
  }

  private SnapshotManifest readManifest(StoreLayout.SnapshotName snapshot) {
    String location = FramedFile.location(storage, snapshot.name());
    SnapshotManifest manifest =
        SnapshotManifest.decode(
            FramedFile.readPayload(storage, snapshot.name(), FileKind.SNAPSHOT_MANIFEST), location);
    checkHoldsWhatItsNameSays(
        location, snapshot.version(), snapshot.commitId(), manifest.version(), manifest.commitId());
    return manifest;
  }

  private void restoreSnapshot(SnapshotManifest manifest) {
    Path dir = newLocalDbDir();
    Map<String, String> restored = new HashMap<>();
    try {
      Files.createDirectories(dir);
      for (SnapshotManifest.Entry e : manifest.files()) {
        Path target = dir.resolve(e.localName());
        if (e.isShared()) {
          FramedFile.copyPayload(storage, e.sharedName(), FileKind.SST, target);
          if (Files.size(target) != e.length()) {
            throw new CorruptFileException(
                FramedFile.location(storage, e.sharedName())
                    + " is corrupt: it holds "
                    + Files.size(target)
                    + " bytes but snapshot "
                    + manifest.version()
                    + " lists "
                    + e.length());
          }
          restored.put(e.localName(), e.sharedName());
        } else {
          Files.write(target, e.inlineContent());
        }
      }
    } catch (IOException e) {
      throw new StreamStateException("Cannot restore snapshot into " + dir + ": " + e, e);
    }
    db = LocalDb.open(name, dir, budget);
    localVersion = manifest.version();
    localId = manifest.commitId();
    confirmedSsts = restored;
    lastSnapshotVersion = Math.max(lastSnapshotVersion, manifest.version());
    snapshotsSeen.add(manifest.version());
  }

  private void openFreshLocal() {
    Path dir = newLocalDbDir();
    db = LocalDb.open(name, dir, budget);
    confirmedSsts = Map.of();
  }

  private Path newLocalDbDir() {
    generation++;
    return localDir.resolve("db-" + generation);
  }

  /** Drops the local instance (its files too); the next load restores from durable storage. */
  private void discardLocal() {
    if (db != null) {
      Path dir = db.dir();
      db.close();
      db = null;
      deleteRecursively(dir);
    }
    localVersion = -1;
    localId = 0;
    lineage.clear();
    confirmedSsts = Map.of();
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
      deleted += segmentCatalog().maybeSweep(options);
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
      return snapshot(false);
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
      return snapshot(true);
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
    CompletableFuture<Long> done = new CompletableFuture<>();
    LocalCheckpoint checkpoint;
    lock.lock();
    try {
      if (closed) {
        done.complete(-1L);
        return done;
      }
      if (version <= lastSnapshotVersion) {
        done.complete(lastSnapshotVersion);
        return done;
      }
      if (snapshotUploading) {
        // Coalesced: served when the running upload ends (uploadEnded).
        snapshotWaiters.add(done);
        snapshotRequested = Math.max(snapshotRequested, version);
        return done;
      }
      if (db == null || localVersion != version) {
        done.complete(-1L);
        return done;
      }
      checkpoint = checkpointLocal();
      snapshotUploading = true;
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

  private long snapshot(boolean force) {
    LocalCheckpoint checkpoint;
    // s1: a local checkpoint, under the lock so that it holds exactly one committed version.
    lock.lock();
    try {
      if (force) {
        while (snapshotUploading && !closed) {
          snapshotEnded.awaitUninterruptibly();
        }
      } else if (snapshotUploading) {
        return -1;
      }
      if (closed || db == null || localVersion <= 0 || localVersion <= lastSnapshotVersion) {
        return -1;
      }
      if (!force && localVersion - Math.max(lastSnapshotVersion, 0) < options.snapshotInterval()) {
        return -1;
      }
      checkpoint = checkpointLocal();
      snapshotUploading = true;
    } finally {
      lock.unlock();
    }
    try {
      return uploadAndConfirm(checkpoint);
    } catch (RuntimeException e) {
      metrics.snapshotFailures.incrementAndGet();
      throw e;
    } finally {
      uploadEnded();
    }
  }

  /** s1: checkpoints the local instance into a scratch directory; holds the lock. */
  private LocalCheckpoint checkpointLocal() {
    Path dir = localDir.resolve(CHECKPOINT_DIR_PREFIX + localVersion + "-" + System.nanoTime());
    try {
      db.checkpoint(dir);
    } catch (RuntimeException e) {
      deleteRecursively(dir);
      throw e;
    }
    return new LocalCheckpoint(
        localVersion, localId, generation, confirmedSsts, dir, this::checkpointDeleted);
  }

  /**
   * s2 and s3 (SnapshotUploader), then s4: the published SSTs become the confirmed set that later
   * snapshots reuse. Ends this upload's use of the checkpoint. Returns the version published, or -1
   * if the store closed first (no manifest published).
   */
  private long uploadAndConfirm(LocalCheckpoint checkpoint) {
    try {
      SnapshotUploader.Published published = uploader.upload(checkpoint, () -> closed);
      if (published == null) {
        LOG.info(
            "Store {}: closed while uploading snapshot {}; it was not published",
            name,
            checkpoint.version);
        return -1;
      }
      lock.lock();
      try {
        lastSnapshotVersion = Math.max(lastSnapshotVersion, checkpoint.version);
        snapshotsSeen.add(checkpoint.version);
        if (generation == checkpoint.generation && !published.shared().isEmpty()) {
          confirmedSsts = published.shared();
        }
      } finally {
        lock.unlock();
      }
      return checkpoint.version;
    } finally {
      checkpoint.release();
    }
  }

  /** Uploads {@code checkpoint} on the background pool, then completes {@code waiters}. */
  private void uploadInBackground(
      LocalCheckpoint checkpoint, List<CompletableFuture<Long>> waiters) {
    try {
      SnapshotUploader.background().execute(() -> runInBackground(checkpoint, waiters));
    } catch (RejectedExecutionException e) {
      checkpoint.release();
      snapshotFailed(checkpoint.version, e);
      uploadEnded();
      waiters.forEach(w -> w.completeExceptionally(e));
    }
  }

  private void runInBackground(LocalCheckpoint checkpoint, List<CompletableFuture<Long>> waiters) {
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
    for (CompletableFuture<Long> w : waiters) {
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

  private void snapshotFailed(long version, Throwable e) {
    metrics.snapshotFailures.incrementAndGet();
    LOG.warn(
        "Store {}: background snapshot of version {} failed; the version stays durable in its"
            + " changelogs and a later snapshot tries again: {}",
        name,
        version,
        e.toString(),
        e);
  }

  /**
   * Ends the running upload. Requests that joined it are served: by a snapshot at or above the
   * newest version they asked for if one exists now, else by a background upload of the newest
   * local version.
   */
  private void uploadEnded() {
    List<CompletableFuture<Long>> waiters;
    LocalCheckpoint next = null;
    long answer = -1;
    RuntimeException failure = null;
    lock.lock();
    try {
      snapshotUploading = false;
      snapshotEnded.signalAll();
      if (snapshotWaiters.isEmpty()) {
        return;
      }
      waiters = snapshotWaiters;
      snapshotWaiters = new ArrayList<>();
      long requested = snapshotRequested;
      snapshotRequested = -1;
      if (closed) {
        answer = -1;
      } else if (lastSnapshotVersion >= requested) {
        answer = lastSnapshotVersion;
      } else if (db == null || localVersion < requested) {
        answer = -1; // the local instance was discarded: nothing of that version to snapshot
      } else {
        try {
          next = checkpointLocal();
          snapshotUploading = true;
        } catch (RuntimeException e) {
          snapshotFailed(localVersion, e);
          failure = e;
        }
      }
    } finally {
      lock.unlock();
    }
    // Outside the lock: completing runs the callers' callbacks.
    if (failure != null) {
      for (CompletableFuture<Long> w : waiters) {
        w.completeExceptionally(failure);
      }
    } else if (next != null) {
      uploadInBackground(next, waiters);
    } else {
      for (CompletableFuture<Long> w : waiters) {
        w.complete(answer);
      }
    }
  }

  /**
   * After a checkpoint directory went with its last user: once the store is closed, its local
   * directory goes with the last checkpoint (close leaves checkpoints in use to their users).
   */
  private void checkpointDeleted() {
    if (closed) {
      deleteIfEmpty(localDir);
    }
  }

  /**
   * Deletes what loading none of the newest {@code minVersionsToRetain} versions needs.
   *
   * @return the number of files deleted
   */
  public int applyRetention() {
    maintenanceLock.lock();
    try {
      return retention();
    } finally {
      maintenanceLock.unlock();
    }
  }

  private int retention() {
    // What this instance knows of its lineage: retention keeps what loading its newest versions
    // needs, so it only runs on an instance that holds the newest version.
    long local;
    NavigableMap<Long, Long> known;
    lock.lock();
    try {
      if (closed || db == null) {
        return 0;
      }
      local = localVersion;
      known = new TreeMap<>(lineage);
    } finally {
      lock.unlock();
    }
    long oldestToKeep = local - options.minVersionsToRetain() + 1;
    if (oldestToKeep <= 1) {
      return 0;
    }
    // After a first full run, the base can only move to a snapshot this instance wrote or restored
    // since: skip the listings (maintenance runs often; most runs have nothing to delete).
    if (retentionRan
        && (oldestToKeep <= retentionBase
            || snapshotsSeen.subSet(retentionBase, false, oldestToKeep, true).isEmpty())) {
      return 0;
    }
    // r1: the newest version from the changelogs (listing is fine: maintenance, not commit).
    List<FileInfo> changelogs = storage.list(layout.changelogDir());
    long latest = -1;
    for (FileInfo f : changelogs) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null) {
        latest = Math.max(latest, n.version());
      }
    }
    // Segment members count too (only segments newer than the local version are read).
    latest = Math.max(latest, segmentCatalog().newestVersionOf(layout.prefix(), local));
    if (latest > local) {
      // Another instance is ahead of this one (this one is stale): it applies retention.
      return 0;
    }
    retentionRan = true;
    // r2: the base: the newest valid snapshot at or below the oldest version to keep that lies on
    // this instance's lineage. A snapshot of another commit of that version (a retry's) would not
    // lead to the newer versions' changelogs.
    List<StoreLayout.SnapshotName> snapshots = new ArrayList<>();
    for (FileInfo f : storage.list(layout.snapshotDir())) {
      StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(f.name());
      if (n != null) {
        snapshots.add(n);
      }
    }
    snapshots.sort(
        Comparator.comparingLong(StoreLayout.SnapshotName::version)
            .thenComparing(StoreLayout.SnapshotName::name)
            .reversed());
    long base = -1;
    String baseName = null;
    Set<String> referenced = new HashSet<>();
    List<String> toDelete = new ArrayList<>();
    for (StoreLayout.SnapshotName s : snapshots) {
      if (base >= 0) {
        toDelete.add(s.name()); // r3: snapshots older than the base, and the base's siblings
        continue;
      }
      SnapshotManifest manifest;
      try {
        manifest = readManifest(s);
      } catch (CorruptFileException | MissingFileException e) {
        continue; // unusable: neither a base nor a holder of references
      }
      referenced.addAll(manifest.sharedNames());
      Long onLineage = known.get(s.version());
      if (s.version() <= oldestToKeep && onLineage != null && onLineage == s.commitId()) {
        base = s.version();
        baseName = s.name();
      }
    }
    if (base < 0) {
      return 0; // no snapshot to stand on: every changelog is still needed
    }
    retentionBase = base;
    snapshotsSeen.headSet(base).clear();
    toDelete.remove(baseName);
    // r4: changelogs at or below the base, of every commit.
    for (FileInfo f : changelogs) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null && n.version() <= base) {
        toDelete.add(f.name());
      }
    }
    // r5: SSTs no retained snapshot references, once older than the grace period (a snapshot in
    // flight elsewhere may have just uploaded them). Not while a snapshot of this store uploads in
    // the background: what it uploaded is referenced only once its manifest is published, and a
    // stalled upload may outlast the grace period. The next run deletes them.
    long now = System.currentTimeMillis();
    if (!isSnapshotUploading()) {
      for (FileInfo f : storage.list(layout.sstDir())) {
        if (!referenced.contains(f.name())
            && now - f.lastModifiedMillis() >= options.tornFileGraceMillis()) {
          toDelete.add(f.name());
        }
      }
    }
    Storages.deleteAll(storage, toDelete);
    metrics.filesDeleted.addAndGet(toDelete.size());
    lock.lock();
    try {
      lineage.headMap(base, false).clear();
    } finally {
      lock.unlock();
    }
    return toDelete.size();
  }

  private boolean isSnapshotUploading() {
    lock.lock();
    try {
      return snapshotUploading;
    } finally {
      lock.unlock();
    }
  }

  // ---------------------------------------------------------------------------------------------

  /**
   * Frees the local instance and deletes the local directory; starts no durable write. A snapshot
   * uploading in the background is not waited for: it starts no further file and publishes no
   * manifest, so what it uploaded stays unreferenced (retention's once older than {@code
   * tornFileGraceMillis}). A create already running cannot be called back and ends on its own (a
   * manifest create that completes is a complete snapshot; an incomplete file never verifies); the
   * checkpoint directory it reads from, and then the local directory, are deleted when it ends.
   * Background snapshot requests still waiting complete with -1. Async durability waits up to 30 s
   * for pending changelog uploads.
   */
  @Override
  public void close() {
    List<CompletableFuture<Long>> waiters;
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      waiters = snapshotWaiters;
      snapshotWaiters = new ArrayList<>();
      snapshotRequested = -1;
      snapshotEnded.signalAll();
      if (openTransaction != null) {
        openTransaction = null;
      }
      withdrawTicket();
      if (uploads != null) {
        List<Long> lost = uploads.close(CLOSE_FLUSH_MILLIS);
        ASYNC_BY_LOCATION.remove(durableLocation(), uploads);
        if (!lost.isEmpty()) {
          LOG.warn(
              "Store {}: closing with versions {} committed but not uploaded (async durability);"
                  + " they are lost unless this process uploads them later",
              name,
              lost);
        }
      }
      discardLocal();
      deleteLocalDirExceptCheckpoints();
    } finally {
      lock.unlock();
    }
    waiters.forEach(w -> w.complete(-1L));
  }

  /**
   * Deletes the local directory, except the checkpoints still in use (an upload, or a create still
   * reading one): the last user of each deletes it, and the local directory with it.
   */
  private void deleteLocalDirExceptCheckpoints() {
    if (!Files.isDirectory(localDir)) {
      return;
    }
    try (Stream<Path> entries = Files.list(localDir)) {
      for (Path p : entries.toList()) {
        if (!p.getFileName().toString().startsWith(CHECKPOINT_DIR_PREFIX)) {
          deleteRecursively(p);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      LOG.warn("Cannot list local directory {}: {}", localDir, e.toString());
    }
    deleteIfEmpty(localDir);
  }

  private static void deleteIfEmpty(Path dir) {
    try {
      Files.deleteIfExists(dir);
    } catch (java.nio.file.DirectoryNotEmptyException inUse) {
      // a checkpoint still in use: its last user deletes it
    } catch (IOException e) {
      LOG.warn("Cannot delete local directory {}: {}", dir, e.toString());
    }
  }

  private void checkNotClosed() {
    if (closed) {
      throw new IllegalStateException("Store " + name + " is closed");
    }
  }

  static void deleteRecursively(Path dir) {
    if (!Files.exists(dir)) {
      return;
    }
    try (Stream<Path> walk = Files.walk(dir)) {
      for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
        Files.deleteIfExists(p);
      }
    } catch (IOException | UncheckedIOException e) {
      LOG.warn("Cannot delete local directory {}: {}", dir, e.toString());
    }
  }
}
