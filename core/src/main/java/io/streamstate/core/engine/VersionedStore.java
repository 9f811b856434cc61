package io.streamstate.core.engine;

import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Set;
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
 * <p>One transaction at a time; {@code maintain()} may run concurrently from another thread. {@link
 * #close()} frees local resources and writes nothing durable, so closing is also how a test
 * simulates a crash.
 */
public final class VersionedStore implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(VersionedStore.class);

  private final String name;
  private final Storage storage;
  private final StoreLayout layout;
  private final Path localDir;
  private final StoreOptions options;
  private final RocksDbMemoryBudget budget;
  private final StoreMetrics metrics = new StoreMetrics();

  /** Guards the local instance, its version and the open transaction. */
  private final ReentrantLock lock = new ReentrantLock();

  /** One maintenance run at a time. */
  private final ReentrantLock maintenanceLock = new ReentrantLock();

  private LocalDb db;
  private long localVersion = -1;
  private int generation;
  private StateTransaction openTransaction;
  private volatile long lastSnapshotVersion = -1;

  /** SSTs of the local instance known to be in a published manifest: local name to shared name. */
  private Map<String, String> confirmedSsts = Map.of();

  private boolean closed;

  private VersionedStore(
      String name,
      Storage storage,
      String prefix,
      Path localDir,
      StoreOptions options,
      RocksDbMemoryBudget budget) {
    this.name = name;
    this.storage = storage;
    this.layout = new StoreLayout(prefix);
    this.localDir = localDir;
    this.options = options;
    this.budget = budget;
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
    deleteRecursively(localDir);
    try {
      Files.createDirectories(localDir);
    } catch (IOException e) {
      throw new StreamStateException("Cannot create local directory " + localDir + ": " + e, e);
    }
    return new VersionedStore(name, storage, prefix, localDir, options, budget);
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
      } else if (db != null && localVersion >= 0 && localVersion < version) {
        metrics.durableLoads.incrementAndGet();
        replay(localVersion + 1, version);
      } else {
        metrics.durableLoads.incrementAndGet();
        restore(version);
      }
      openTransaction = new StateTransaction(this, db, version);
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
      // c1: the changes as one changelog payload.
      Changelog changelog = tx.toChangelog(newVersion);
      byte[] payload = changelog.encode();
      // c2: publish it, create-if-absent: the one durable step; the version exists once it returns.
      long written = publishChangelog(newVersion, payload);
      // c3: apply locally. Durable state is the truth: a local failure now only costs a restore.
      try {
        db.apply(changelog);
        localVersion = newVersion;
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
      lock.unlock();
    }
  }

  /** Releases the open transaction without committing. */
  void release(StateTransaction tx) {
    lock.lock();
    try {
      if (openTransaction == tx) {
        openTransaction = null;
      }
    } finally {
      lock.unlock();
    }
  }

  /** Publishes the changelog of {@code version}; returns the bytes written (0 if it was there). */
  private long publishChangelog(long version, byte[] payload) {
    String file = layout.changelog(version);
    for (int attempt = 0; ; attempt++) {
      try {
        storage.create(file, FramedFile.writer(FileKind.CHANGELOG, payload));
        long bytes = payload.length + FramedFile.HEADER_LENGTH + FramedFile.FOOTER_LENGTH;
        metrics.filesWritten.incrementAndGet();
        metrics.bytesWritten.addAndGet(bytes);
        return bytes;
      } catch (FileAlreadyExistsException exists) {
        byte[] existing;
        try {
          existing = readWinningChangelog(file);
        } catch (MissingFileException gone) {
          if (attempt == 0) {
            continue; // removed between our create and our read: try once more
          }
          throw gone;
        } catch (CorruptFileException torn) {
          if (attempt == 0 && removeIfAbandoned(file)) {
            continue;
          }
          throw new ConflictException(
              "Cannot commit version "
                  + version
                  + " of store "
                  + name
                  + ": changelog "
                  + FramedFile.location(storage, file)
                  + " already exists but does not verify ("
                  + torn.getMessage()
                  + "). Another writer may still be writing it; if its writer"
                  + " crashed it is removed once older than "
                  + options.tornFileGraceMillis()
                  + " ms.",
              torn);
        }
        if (Arrays.equals(existing, payload)) {
          // The same attempt (or an identical one) committed before: an idempotent retry.
          metrics.idempotentCommits.incrementAndGet();
          return 0;
        }
        throw new ConflictException(
            "Cannot commit version "
                + version
                + " of store "
                + name
                + ": changelog "
                + FramedFile.location(storage, file)
                + " already exists with different content"
                + " (another writer committed this version first: a task retry, a speculative"
                + " attempt or a zombie).");
      }
    }
  }

  /**
   * Reads a changelog another writer published. On stores that show files while they are being
   * written the winner may still be writing: re-read a few times (about 5 s in all) before giving
   * up, so that the loser learns the definitive outcome (same content: success; else conflict).
   */
  private byte[] readWinningChangelog(String file) {
    long backoffMillis = 5;
    for (int attempt = 0; ; attempt++) {
      try {
        return FramedFile.readPayload(storage, file, FileKind.CHANGELOG);
      } catch (CorruptFileException incomplete) {
        if (attempt >= 10) {
          throw incomplete;
        }
      }
      try {
        Thread.sleep(backoffMillis);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StreamStateException("Interrupted while reading " + file, e);
      }
      backoffMillis *= 2;
    }
  }

  /**
   * Deletes a file that does not verify if it is older than the grace period (the leftover of a
   * crashed writer). Returns whether it was deleted.
   */
  private boolean removeIfAbandoned(String file) {
    long now = System.currentTimeMillis();
    for (FileInfo info : storage.list(file)) {
      if (info.name().equals(file)
          && now - info.lastModifiedMillis() >= options.tornFileGraceMillis()) {
        LOG.warn("Store {}: removing unverifiable file {} left by a crashed writer", name, file);
        storage.delete(file);
        metrics.filesDeleted.incrementAndGet();
        return true;
      }
    }
    return false;
  }

  // ---------------------------------------------------------------------------------------------
  // Recovery (docs/protocol.md, "Load and recovery")

  private void restore(long version) {
    discardLocal();
    if (version == 0) {
      openFreshLocal();
      localVersion = 0;
      return;
    }
    List<Long> snapshots = new ArrayList<>();
    for (FileInfo f : storage.list(layout.snapshotDir())) {
      long v = StoreLayout.versionOf(f.name(), StoreLayout.SNAPSHOT_SUFFIX);
      if (v > 0 && v <= version) {
        snapshots.add(v);
      }
    }
    snapshots.sort(Comparator.reverseOrder());
    List<String> skipped = new ArrayList<>();
    for (long s : snapshots) {
      SnapshotManifest manifest;
      try {
        manifest = readManifest(s);
        restoreSnapshot(manifest);
      } catch (CorruptFileException | MissingFileException e) {
        // An unusable snapshot is safe to skip: an older one plus changelogs gives the same state.
        LOG.warn(
            "Store {}: snapshot {} is unusable, trying an older one: {}", name, s, e.getMessage());
        skipped.add(e.getMessage());
        discardLocal();
        continue;
      }
      replayAfterRestore(s, version, skipped);
      return;
    }
    openFreshLocal();
    localVersion = 0;
    replayAfterRestore(0, version, skipped);
  }

  private void replayAfterRestore(long from, long version, List<String> skipped) {
    try {
      replay(from + 1, version);
    } catch (MissingFileException | CorruptFileException e) {
      String detail =
          skipped.isEmpty() ? "" : " Snapshots skipped as unusable: " + String.join("; ", skipped);
      String message =
          "Cannot load version "
              + version
              + " of store "
              + name
              + " from "
              + (from == 0 ? "empty state" : "snapshot " + from)
              + ": "
              + e.getMessage()
              + "."
              + detail;
      if (e instanceof MissingFileException) {
        throw new MissingFileException(message, e);
      }
      throw new CorruptFileException(message, e);
    }
  }

  /** Applies changelogs {@code from..to} (inclusive) to the local instance. */
  private void replay(long from, long to) {
    for (long v = from; v <= to; v++) {
      String file = layout.changelog(v);
      String location = FramedFile.location(storage, file);
      byte[] payload = FramedFile.readPayload(storage, file, FileKind.CHANGELOG);
      Changelog changelog = Changelog.decode(payload, location);
      if (changelog.version() != v) {
        throw new CorruptFileException(
            location + " is corrupt: it holds version " + changelog.version() + ", not " + v);
      }
      db.apply(changelog);
      localVersion = v;
      metrics.changelogsReplayed.incrementAndGet();
    }
  }

  private SnapshotManifest readManifest(long version) {
    String file = layout.snapshot(version);
    String location = FramedFile.location(storage, file);
    SnapshotManifest manifest =
        SnapshotManifest.decode(
            FramedFile.readPayload(storage, file, FileKind.SNAPSHOT_MANIFEST), location);
    if (manifest.version() != version) {
      throw new CorruptFileException(
          location + " is corrupt: it holds version " + manifest.version() + ", not " + version);
    }
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
    confirmedSsts = restored;
    lastSnapshotVersion = Math.max(lastSnapshotVersion, manifest.version());
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
      return new MaintenanceResult(snapshot, deleted);
    } finally {
      maintenanceLock.unlock();
    }
  }

  /**
   * Writes a snapshot of the local instance if it is at least {@code snapshotInterval} versions
   * past the last one.
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

  /** Writes a snapshot of the local instance now, whatever the interval. Returns its version. */
  public long snapshotNow() {
    maintenanceLock.lock();
    try {
      return snapshot(true);
    } finally {
      maintenanceLock.unlock();
    }
  }

  private long snapshot(boolean force) {
    long version;
    int gen;
    Map<String, String> confirmed;
    Path checkpoint;
    // s1: a local checkpoint, under the lock so that it holds exactly one committed version.
    lock.lock();
    try {
      if (closed || db == null || localVersion <= 0 || localVersion <= lastSnapshotVersion) {
        return -1;
      }
      if (!force && localVersion - Math.max(lastSnapshotVersion, 0) < options.snapshotInterval()) {
        return -1;
      }
      version = localVersion;
      gen = generation;
      confirmed = confirmedSsts;
      checkpoint = localDir.resolve("checkpoint-" + version + "-" + System.nanoTime());
      db.checkpoint(checkpoint);
    } finally {
      lock.unlock();
    }
    try {
      // s2: upload the SSTs no confirmed snapshot holds; s3: publish the manifest.
      Map<String, String> shared = new HashMap<>();
      SnapshotManifest manifest = uploadCheckpoint(version, checkpoint, confirmed, shared);
      String file = layout.snapshot(version);
      try {
        byte[] payload = manifest.encode();
        storage.create(file, FramedFile.writer(FileKind.SNAPSHOT_MANIFEST, payload));
        metrics.filesWritten.incrementAndGet();
        metrics.bytesWritten.addAndGet(payload.length + 24L);
        metrics.snapshotsWritten.incrementAndGet();
      } catch (FileAlreadyExistsException e) {
        // Another instance snapshotted this version; its manifest is as good as ours.
        LOG.info("Store {}: snapshot {} already exists", name, version);
        shared.clear();
      }
      // s4: our SSTs are now confirmed: later snapshots may reuse them.
      lock.lock();
      try {
        lastSnapshotVersion = Math.max(lastSnapshotVersion, version);
        if (generation == gen && !shared.isEmpty()) {
          confirmedSsts = shared;
        }
      } finally {
        lock.unlock();
      }
      return version;
    } finally {
      deleteRecursively(checkpoint);
    }
  }

  private SnapshotManifest uploadCheckpoint(
      long version, Path checkpoint, Map<String, String> confirmed, Map<String, String> shared) {
    List<SnapshotManifest.Entry> entries = new ArrayList<>();
    List<Path> files;
    try (Stream<Path> s = Files.list(checkpoint)) {
      files = s.sorted().toList();
    } catch (IOException e) {
      throw new StreamStateException("Cannot list checkpoint " + checkpoint + ": " + e, e);
    }
    try {
      for (Path f : files) {
        String localName = f.getFileName().toString();
        long length = Files.size(f);
        if (localName.endsWith(".sst")) {
          String sharedName = confirmed.get(localName);
          if (sharedName != null && sharedName.endsWith("-" + length + ".sst")) {
            metrics.sstFilesReused.incrementAndGet();
          } else {
            sharedName = layout.sst(sha256(f), length);
            uploadSst(sharedName, f);
          }
          shared.put(localName, sharedName);
          entries.add(SnapshotManifest.Entry.shared(localName, length, sharedName));
        } else {
          entries.add(SnapshotManifest.Entry.inline(localName, Files.readAllBytes(f)));
        }
      }
    } catch (IOException e) {
      throw new StreamStateException("Cannot read checkpoint " + checkpoint + ": " + e, e);
    }
    return new SnapshotManifest(version, entries);
  }

  private void uploadSst(String sharedName, Path file) throws IOException {
    for (int attempt = 0; ; attempt++) {
      try {
        storage.create(sharedName, FramedFile.writer(FileKind.SST, file));
        metrics.sstFilesUploaded.incrementAndGet();
        metrics.filesWritten.incrementAndGet();
        metrics.bytesWritten.addAndGet(Files.size(file) + 24L);
        return;
      } catch (FileAlreadyExistsException e) {
        // Same name, same content, unless it is a torn upload of a crashed writer: verify it.
        try {
          FramedFile.verify(storage, sharedName, FileKind.SST);
          metrics.sstFilesReused.incrementAndGet();
          return;
        } catch (CorruptFileException torn) {
          if (attempt == 0 && removeIfAbandoned(sharedName)) {
            continue;
          }
          throw torn;
        }
      }
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
    // r1: find the newest version from the changelogs (listing is fine: maintenance, not commit).
    List<FileInfo> changelogs = storage.list(layout.changelogDir());
    long latest = -1;
    for (FileInfo f : changelogs) {
      latest = Math.max(latest, StoreLayout.versionOf(f.name(), StoreLayout.CHANGELOG_SUFFIX));
    }
    long oldestToKeep = latest - options.minVersionsToRetain() + 1;
    if (latest < 0 || oldestToKeep <= 1) {
      return 0;
    }
    // r2: the base: the newest valid snapshot at or below the oldest version to keep.
    List<FileInfo> snapshots = new ArrayList<>(storage.list(layout.snapshotDir()));
    snapshots.sort(Comparator.comparing(FileInfo::name).reversed());
    long base = -1;
    Set<String> referenced = new HashSet<>();
    List<String> toDelete = new ArrayList<>();
    for (FileInfo f : snapshots) {
      long v = StoreLayout.versionOf(f.name(), StoreLayout.SNAPSHOT_SUFFIX);
      if (v < 0) {
        continue;
      }
      if (base >= 0) {
        toDelete.add(f.name()); // r3: snapshots older than the base
        continue;
      }
      SnapshotManifest manifest;
      try {
        manifest = readManifest(v);
      } catch (CorruptFileException | MissingFileException e) {
        continue; // unusable: neither a base nor a holder of references
      }
      referenced.addAll(manifest.sharedNames());
      if (v <= oldestToKeep) {
        base = v;
      }
    }
    if (base < 0) {
      return 0; // no snapshot to stand on: every changelog is still needed
    }
    // r4: changelogs at or below the base.
    for (FileInfo f : changelogs) {
      long v = StoreLayout.versionOf(f.name(), StoreLayout.CHANGELOG_SUFFIX);
      if (v >= 0 && v <= base) {
        toDelete.add(f.name());
      }
    }
    // r5: SSTs no retained snapshot references, once older than the grace period (a snapshot in
    // flight elsewhere may have just uploaded them).
    long now = System.currentTimeMillis();
    for (FileInfo f : storage.list(layout.sstDir())) {
      if (!referenced.contains(f.name())
          && now - f.lastModifiedMillis() >= options.tornFileGraceMillis()) {
        toDelete.add(f.name());
      }
    }
    Storages.deleteAll(storage, toDelete);
    metrics.filesDeleted.addAndGet(toDelete.size());
    return toDelete.size();
  }

  // ---------------------------------------------------------------------------------------------

  @Override
  public void close() {
    lock.lock();
    try {
      if (closed) {
        return;
      }
      closed = true;
      if (openTransaction != null) {
        openTransaction = null;
      }
      discardLocal();
      deleteRecursively(localDir);
    } finally {
      lock.unlock();
    }
  }

  private void checkNotClosed() {
    if (closed) {
      throw new IllegalStateException("Store " + name + " is closed");
    }
  }

  private static String sha256(Path file) throws IOException {
    MessageDigest digest;
    try {
      digest = MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
    byte[] buffer = new byte[64 * 1024];
    try (InputStream in = Files.newInputStream(file)) {
      int n;
      while ((n = in.read(buffer)) > 0) {
        digest.update(buffer, 0, n);
      }
    }
    return HexFormat.of().formatHex(digest.digest());
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
