package io.streamstate.core.engine.local;

import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The working state of one store: its local RocksDB instance ({@link LocalDb}), the version and
 * commit id that instance holds, the lineage it stands on, the SSTs known to be in a published
 * manifest, and the store's local directory they all live in.
 *
 * <pre>
 * &lt;local dir&gt;/db-&lt;generation&gt;/                 one RocksDB instance (a new one per restore)
 * &lt;local dir&gt;/checkpoint-&lt;version&gt;-&lt;nanos&gt;/    a snapshot's scratch checkpoint (hard links)
 * </pre>
 *
 * A local instance is never trusted across store instances (its WAL is off): {@link #create}
 * empties the directory. Not thread-safe: the store's lock guards every call, except {@link
 * #checkpointReleased}.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class LocalInstance {
  private static final Logger LOG = LoggerFactory.getLogger(LocalInstance.class);

  /** Scratch directories of local checkpoints start with this. */
  private static final String CHECKPOINT_DIR_PREFIX = "checkpoint-";

  private final String storeName;
  private final Path dir;
  private final RocksDbMemoryBudget budget;
  private final OpenDatabases openDatabases;
  private final LocalSpace space;

  private LocalDb db;
  private long version = -1;

  /** The commit id of {@link #version} (0 for the empty state). */
  private long commitId;

  /**
   * The commit ids of the versions on the instance's lineage that this store instance loaded or
   * committed, so retention keeps exactly the snapshots that lineage stands on.
   */
  private final NavigableMap<Long, Long> lineage = new TreeMap<>();

  /**
   * Changes per version this instance applied since it was opened (committed, or replayed by a
   * load): what a load from an older snapshot would replay ({@link #changesAbove}).
   */
  private final NavigableMap<Long, Long> changesByVersion = new TreeMap<>();

  /** Counts the RocksDB instances made; a snapshot's SSTs are confirmed only for its generation. */
  private int generation;

  /** SSTs of the instance known to be in a published manifest: local name to shared name. */
  private Map<String, String> confirmedSsts = Map.of();

  /** Written under the store's lock; read without it by the last user of a checkpoint. */
  private volatile boolean closed;

  private LocalInstance(
      String storeName,
      Path dir,
      RocksDbMemoryBudget budget,
      OpenDatabases openDatabases,
      LocalSpace space) {
    this.space = space;
    this.storeName = storeName;
    this.dir = dir;
    this.budget = budget;
    this.openDatabases = openDatabases;
  }

  /**
   * The working state of a store whose local directory is {@code dir}: whatever it holds is
   * deleted, since a local instance is never trusted across store instances. {@code space} is that
   * directory's ({@link LocalSpace#dir}).
   */
  public static LocalInstance create(
      String storeName, RocksDbMemoryBudget budget, OpenDatabases openDatabases, LocalSpace space) {
    Path dir = space.dir();
    deleteRecursively(dir);
    try {
      Files.createDirectories(dir);
    } catch (IOException e) {
      StreamStateException diskFull = space.diskFullOrNull("creating the local directory", e);
      throw diskFull != null
          ? diskFull
          : new StreamStateException("Cannot create local directory " + dir + ": " + e, e);
    }
    return new LocalInstance(storeName, dir, budget, openDatabases, space);
  }

  /** The local directory's space: how a lack of it is reported. */
  public LocalSpace space() {
    return space;
  }

  public boolean isOpen() {
    return db != null;
  }

  public LocalDb db() {
    return db;
  }

  /** The version the instance holds, or -1 if none. */
  public long version() {
    return version;
  }

  public long commitId() {
    return commitId;
  }

  public int generation() {
    return generation;
  }

  public Map<String, String> confirmedSsts() {
    return confirmedSsts;
  }

  /**
   * Whether the instance holds {@code version}. May wait: a RocksDB write still running after its
   * apply returned ({@link LocalDb#usable}) must end before the instance is known to hold it; a
   * write that failed means it does not.
   */
  public boolean holds(long version) {
    return db != null && this.version == version && db.usable();
  }

  /**
   * Whether the instance holds commit {@code commitId} of {@code version}; may wait, as {@link
   * #holds(long)}.
   */
  public boolean holds(long version, long commitId) {
    return holds(version) && this.commitId == commitId;
  }

  /** Whether the instance holds a version older than {@code version}. */
  public boolean holdsOlderThan(long version) {
    return db != null && this.version >= 0 && this.version < version;
  }

  /** Replaces the instance with the empty state, version 0. */
  public void openEmpty() {
    discard();
    db = LocalDb.open(storeName, newDbDir(), budget, openDatabases, space);
    confirmedSsts = Map.of();
    version = 0;
    commitId = 0;
    lineage.put(0L, 0L);
  }

  /**
   * Replaces the instance with an empty state that stands for {@code version} (offline state
   * rewrites: the state written next replaces all that came before). No durable commit has that
   * version's state: the instance must be discarded unless the version built on it is published
   * whole, as a snapshot.
   */
  public void openEmptyAt(long version) {
    discard();
    db = LocalDb.open(storeName, newDbDir(), budget, openDatabases, space);
    confirmedSsts = Map.of();
    this.version = version;
    commitId = 0;
    lineage.clear();
    lineage.put(version, 0L);
  }

  /** A fresh directory for a new RocksDB instance (of the next generation). */
  public Path newDbDir() {
    generation++;
    return dir.resolve("db-" + generation);
  }

  /**
   * Opens the instance restored into {@code dbDir} (from {@link #newDbDir}) as commit {@code
   * commitId} of {@code version}, whose SSTs {@code confirmed} are in a published manifest.
   */
  public void openRestored(Path dbDir, long version, long commitId, Map<String, String> confirmed) {
    db = LocalDb.open(storeName, dbDir, budget, openDatabases, space);
    this.version = version;
    this.commitId = commitId;
    this.confirmedSsts = confirmed;
    lineage.put(version, commitId);
    changesByVersion.clear();
  }

  /** Applies the next version's changelog, which becomes the version the instance holds. */
  public void apply(Changelog changelog) {
    db.apply(changelog);
    version = changelog.version();
    commitId = changelog.commitId();
    lineage.put(version, commitId);
    changesByVersion.put(version, changelog.changeCount());
  }

  /**
   * The changes of the versions above {@code base} that this instance applied, or -1 if it was
   * opened above {@code base} (it does not know them). Forgets the versions at or below {@code
   * base}: callers pass the last snapshot's version (-1 for none: a load then starts from the empty
   * version 0), which only grows.
   */
  public long changesAbove(long base) {
    long from = Math.max(base, 0);
    changesByVersion.headMap(from, true).clear();
    if (db == null || version <= from) {
      return 0;
    }
    if (changesByVersion.isEmpty() || changesByVersion.firstKey() > from + 1) {
      return -1;
    }
    long sum = 0;
    for (long changes : changesByVersion.values()) {
      sum += changes;
    }
    return sum;
  }

  /**
   * Forgets the oldest lineage entry if the lineage holds more than {@code max} (one per call, so a
   * long lineage a load replayed shrinks one commit at a time); forgetting only makes retention
   * keep more.
   */
  public void forgetOldestBeyond(long max) {
    if (lineage.size() > max) {
      lineage.pollFirstEntry();
    }
  }

  /** Forgets the lineage below {@code base} (retention deleted what it needed). */
  public void forgetLineageBelow(long base) {
    lineage.headMap(base, false).clear();
  }

  /** A copy of what the instance knows of its lineage: version to commit id. */
  public NavigableMap<Long, Long> lineage() {
    return new TreeMap<>(lineage);
  }

  /**
   * The SSTs a snapshot of generation {@code generation} published: later snapshots reuse them,
   * unless the instance was replaced since (or the manifest was another instance's: none).
   */
  public void confirm(int generation, Map<String, String> shared) {
    if (this.generation == generation && !shared.isEmpty()) {
      confirmedSsts = shared;
    }
  }

  /**
   * Completes when the compactions that the instance's applies started after large deletes have
   * ended ({@link LocalDb#compactionsDone}); at once without an instance.
   */
  public CompletableFuture<Void> compactionsDone() {
    return db == null ? CompletableFuture.completedFuture(null) : db.compactionsDone();
  }

  public long estimateKeys() {
    return db == null ? 0 : db.estimateKeys();
  }

  /** Drops the RocksDB instance (its files too); the next load restores from durable storage. */
  public void discard() {
    if (db != null) {
      Path dbDir = db.dir();
      db.close();
      db = null;
      deleteRecursively(dbDir);
    }
    version = -1;
    commitId = 0;
    lineage.clear();
    changesByVersion.clear();
    confirmedSsts = Map.of();
  }

  /**
   * Flushes the instance and writes a checkpoint of it (hard links) into a new scratch directory,
   * which the caller deletes (and then calls {@link #checkpointReleased}).
   */
  public Path checkpoint() {
    Path target = dir.resolve(CHECKPOINT_DIR_PREFIX + version + "-" + System.nanoTime());
    try {
      db.checkpoint(target);
    } catch (RuntimeException e) {
      deleteRecursively(target);
      throw e;
    }
    return target;
  }

  /**
   * After a checkpoint directory went with its last user: once closed, the local directory goes
   * with the last checkpoint ({@link #close} leaves checkpoints in use to their users).
   */
  public void checkpointReleased() {
    if (closed) {
      deleteIfEmpty(dir);
    }
  }

  /**
   * Drops the instance and deletes the local directory, except the checkpoints still in use (an
   * upload, or a create still reading one): the last user of each deletes it, and the local
   * directory with it.
   */
  public void close() {
    closed = true;
    discard();
    if (!Files.isDirectory(dir)) {
      return;
    }
    try (Stream<Path> entries = Files.list(dir)) {
      for (Path p : entries.toList()) {
        if (!p.getFileName().toString().startsWith(CHECKPOINT_DIR_PREFIX)) {
          deleteRecursively(p);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      LOG.warn("Cannot list local directory {}: {}", dir, e.toString());
    }
    deleteIfEmpty(dir);
  }

  private static void deleteIfEmpty(Path dir) {
    try {
      Files.deleteIfExists(dir);
    } catch (DirectoryNotEmptyException inUse) {
      // a checkpoint still in use: its last user deletes it
    } catch (IOException e) {
      LOG.warn("Cannot delete local directory {}: {}", dir, e.toString());
    }
  }

  /** Deletes a local directory and everything in it; logs what it cannot delete. */
  public static void deleteRecursively(Path dir) {
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
