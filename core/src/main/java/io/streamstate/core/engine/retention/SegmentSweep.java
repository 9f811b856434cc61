package io.streamstate.core.engine.retention;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StorageClock;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.segment.SegmentCatalog.SegmentFile;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Segment;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The sweep of one storage root's segments and segment journals (docs/protocol.md, "Group commit"
 * g4, "Segment journal" j7): segments are shared by stores whose bases move independently, possibly
 * in other processes, so per-store retention never deletes them. A segment goes once every member's
 * version is at or below its store's retention base (I12), the base {@link RetentionPlanner}
 * chooses; a journal once every record in it is dead and no writer can still append to it (I13).
 * One per storage root per process ({@link #of}), so that every store of the root shares one sweep
 * schedule; sweeps by several processes are idempotent.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SegmentSweep {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentSweep.class);

  /** How often a process sweeps one storage root at most (maintenance calls it far more often). */
  static final long SWEEP_INTERVAL_MILLIS = 60_000;

  /** How often at most with a short torn-file grace period. */
  static final long MIN_SWEEP_INTERVAL_MILLIS = 1_000;

  private final Storage storage;
  private final SegmentCatalog catalog;
  private final StorageClock clock;
  private final ReentrantLock sweepLock = new ReentrantLock();

  /** When this process last swept, by the monotonic clock; null: never. */
  private volatile Long lastSweepNanos;

  /** Parent ids read from changelog files during one sweep (empty: the file does not verify). */
  private final Map<String, Optional<Long>> parentsRead = new HashMap<>();

  /** The sweeps of a process by storage root (a component of its {@link ProcessResources}). */
  private static final class ByStorage {
    final Map<Storage, SegmentSweep> sweeps = new WeakHashMap<>();
  }

  private SegmentSweep(Storage storage, SegmentCatalog catalog, StorageClock clock) {
    this.storage = storage;
    this.catalog = catalog;
    this.clock = clock;
  }

  /** The sweep of {@code storage} in {@code resources}'s process. */
  public static SegmentSweep of(ProcessResources resources, Storage storage) {
    ByStorage all = resources.component(ByStorage.class, ByStorage::new);
    synchronized (all) {
      return all.sweeps.computeIfAbsent(
          storage,
          s -> new SegmentSweep(s, SegmentCatalog.of(resources, s), StorageClock.of(resources, s)));
    }
  }

  /**
   * Sweeps unless this process swept this root within the last minute, or within the torn-file
   * grace period if that is shorter (every age the sweep waits for is a multiple of it), but not
   * more often than once a second; returns files deleted.
   */
  public int maybeSweep(StoreOptions options) {
    long interval =
        Math.max(
            MIN_SWEEP_INTERVAL_MILLIS,
            Math.min(SWEEP_INTERVAL_MILLIS, options.tornFileGraceMillis()));
    Long last = lastSweepNanos;
    if (last != null && System.nanoTime() - last < TimeUnit.MILLISECONDS.toNanos(interval)) {
      return 0;
    }
    return sweep(options);
  }

  /**
   * Deletes every segment whose members no store needs: a member is needed until its store has a
   * retention base at or above its version. Also deletes unreadable segments older than the
   * torn-file grace period, and journals whose records are all dead once no writer can append to
   * them.
   *
   * @return the number of files deleted
   */
  public int sweep(StoreOptions options) {
    if (!sweepLock.tryLock()) {
      return 0; // another thread of this process is sweeping this root
    }
    try {
      lastSweepNanos = System.nanoTime();
      parentsRead.clear();
      // Ages are judged by storage time (I14), learned only if some file's age matters.
      AgeCheck ages = new AgeCheck(options.tornFileGraceMillis());
      List<FileInfo> files = storage.list(SegmentCatalog.SEGMENT_DIR);
      NavigableMap<Long, List<SegmentFile>> listed = catalog.list(files);
      Map<String, List<Member>> byStore = new HashMap<>();
      Map<SegmentFile, Segment.Index> readable = new LinkedHashMap<>();
      List<String> toDelete = new ArrayList<>();
      Set<String> liveJournals = new HashSet<>();
      for (List<SegmentFile> ofVersion : listed.values()) {
        for (SegmentFile f : ofVersion) {
          try {
            Segment.Index index = catalog.index(f.name().name());
            readable.put(f, index);
            for (Segment.IndexEntry e : index.entries()) {
              byStore
                  .computeIfAbsent(e.storePrefix(), p -> new ArrayList<>())
                  .add(new Member(f, e.commitId(), e.parentId()));
            }
          } catch (CorruptFileException unreadable) {
            // I8: a segment that does not verify may still be being written.
            if (!SegmentCatalog.isJournalRecord(f.name().name())
                && ages.isOld(f.lastModifiedMillis())) {
              LOG.warn("Removing unreadable segment left by a crashed writer: {}", unreadable);
              toDelete.add(f.name().name());
            }
          } catch (MissingFileException gone) {
            // deleted by another sweeper
          }
        }
      }
      Map<String, Long> bases = new HashMap<>();
      for (Map.Entry<String, List<Member>> e : byStore.entrySet()) {
        bases.put(e.getKey(), retentionBase(e.getKey(), e.getValue(), options));
      }
      for (Map.Entry<SegmentFile, Segment.Index> e : readable.entrySet()) {
        boolean dead = true;
        for (Segment.IndexEntry entry : e.getValue().entries()) {
          long base = bases.getOrDefault(entry.storePrefix(), -1L);
          if (base < 0 || e.getValue().version() > base) {
            dead = false;
            break;
          }
        }
        String name = e.getKey().name().name();
        if (SegmentCatalog.isJournalRecord(name)) {
          if (!dead) {
            liveJournals.add(SegmentCatalog.journalOf(name));
          }
        } else if (dead) {
          toDelete.add(name);
        }
      }
      // A journal goes as a whole: once every record in it is dead, and once no writer can still
      // append to it: its close-by time plus the grace period has passed, and it was last
      // modified longer ago than the grace period (where appends stamp it, a writer whose close-by
      // time was set by a skewed clock is seen still appending).
      for (FileInfo f : files) {
        long closeBy = SegmentCatalog.journalCloseByMillis(f.name());
        if (closeBy >= 0
            && !liveJournals.contains(f.name())
            && !catalog.isOpenJournal(f.name())
            && ages.isPast(closeBy)
            && ages.isOld(f.lastModifiedMillis())) {
          toDelete.add(f.name());
        }
      }
      Storages.deleteAll(storage, toDelete);
      toDelete.forEach(catalog::forget);
      if (!toDelete.isEmpty()) {
        LOG.info(
            "Segment sweep of {} deleted {} segment files", storage.describe(), toDelete.size());
      }
      return toDelete.size();
    } finally {
      sweepLock.unlock();
    }
  }

  /** One sweep's judge of ages, by storage time learned on first need (once per sweep). */
  private final class AgeCheck {
    private final long graceMillis;
    private OptionalLong now;

    AgeCheck(long graceMillis) {
      this.graceMillis = graceMillis;
    }

    /** Whether a file last modified at {@code lastModifiedMillis} is the grace period old. */
    boolean isOld(long lastModifiedMillis) {
      OptionalLong t = now();
      // Whole-second store times: a file listed as old enough may be up to a second younger.
      return t.isPresent()
          && FileInfo.isSurelyOlderThan(lastModifiedMillis, t.getAsLong(), graceMillis);
    }

    /** Whether the grace period has passed since {@code millis}. */
    boolean isPast(long millis) {
      OptionalLong t = now();
      return t.isPresent() && t.getAsLong() >= millis + graceMillis;
    }

    private OptionalLong now() {
      if (now == null) {
        now = clock.now();
      }
      return now;
    }
  }

  private record Member(SegmentFile file, long commitId, long parentId) {
    long version() {
      return file.name().version();
    }
  }

  /** A commit the sweep considers; {@code changelog} is null for a segment member. */
  private record Candidate(
      long version, long commitId, long parentId, StoreLayout.ChangelogName changelog) {}

  /**
   * The retention base of one store, or -1 if it has none yet: walks its newest lineage back
   * through segment members and changelog files, then asks the planner for the base on it.
   */
  private long retentionBase(String prefix, List<Member> members, StoreOptions options) {
    long segmentTop = -1;
    for (Member m : members) {
      segmentTop = Math.max(segmentTop, m.version());
    }
    if (RetentionPlanner.oldestToKeep(segmentTop, options.minVersionsToRetain()) < 0) {
      return -1; // too young for any base: skip listing the store
    }
    StoreLayout layout = new StoreLayout(prefix);
    // Every candidate commit by version: segment members, and changelog files (parent read lazily).
    NavigableMap<Long, List<Candidate>> byVersion = new TreeMap<>();
    for (Member m : members) {
      byVersion
          .computeIfAbsent(m.version(), v -> new ArrayList<>())
          .add(new Candidate(m.version(), m.commitId(), m.parentId(), null));
    }
    for (StoreFiles.ListedChangelog f : StoreFiles.changelogs(storage, layout)) {
      StoreLayout.ChangelogName n = f.name();
      byVersion
          .computeIfAbsent(n.version(), v -> new ArrayList<>())
          .add(new Candidate(n.version(), n.commitId(), 0, n));
    }
    long top = byVersion.lastKey();
    long oldestToKeep = RetentionPlanner.oldestToKeep(top, options.minVersionsToRetain());
    if (oldestToKeep < 0) {
      return -1;
    }
    List<StoreLayout.SnapshotName> snapshots = StoreFiles.snapshots(storage, layout);
    Map<StoreLayout.SnapshotName, Boolean> usable = new HashMap<>();
    // Loads take the newest valid commit of the newest version; which one that is can depend on
    // timestamps, so the base must serve the lineage of every commit of that version.
    long base = Long.MAX_VALUE;
    boolean any = false;
    for (Candidate c : byVersion.get(top)) {
      Long parent = parentOf(c);
      if (parent == null) {
        continue; // does not verify: loads skip it too
      }
      any = true;
      Map<Long, Long> lineage = lineageOf(byVersion, top, c.commitId(), parent);
      base =
          Math.min(
              base,
              RetentionPlanner.baseVersion(
                  snapshots,
                  oldestToKeep,
                  lineage,
                  s -> usable.computeIfAbsent(s, this::isUsable)));
    }
    return any ? base : -1;
  }

  /**
   * The lineage of commit {@code id} of {@code top} as far back as its commits are found: version
   * to commit id.
   */
  private Map<Long, Long> lineageOf(
      NavigableMap<Long, List<Candidate>> byVersion, long top, long id, long parent) {
    Map<Long, Long> lineage = new HashMap<>();
    lineage.put(top, id);
    long expected = parent;
    for (long v = top - 1; v >= 0; v--) {
      lineage.put(v, expected);
      Long next = null;
      for (Candidate c : byVersion.getOrDefault(v, List.of())) {
        if (c.commitId() == expected) {
          next = parentOf(c);
          if (next != null) {
            break;
          }
        }
      }
      if (next == null) {
        break; // the lineage's older changelogs are gone (or never existed): it stops here
      }
      expected = next;
    }
    return lineage;
  }

  /** A snapshot is a base only if it can be restored: the test loads and retention use. */
  private boolean isUsable(StoreLayout.SnapshotName s) {
    try {
      StoreFiles.readManifest(storage, s);
      return true;
    } catch (CorruptFileException | MissingFileException unusable) {
      return false;
    }
  }

  /** The parent id of a candidate, or null if its changelog does not verify. */
  private Long parentOf(Candidate c) {
    if (c.changelog() == null) {
      return c.parentId();
    }
    return parentsRead
        .computeIfAbsent(c.changelog().name(), n -> Optional.ofNullable(readParent(c.changelog())))
        .orElse(null);
  }

  private Long readParent(StoreLayout.ChangelogName changelog) {
    try {
      return StoreFiles.readStoredChangelog(storage, changelog).parentId();
    } catch (CorruptFileException | MissingFileException unusable) {
      return null;
    }
  }
}
