package io.streamstate.core.engine;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The segments of one storage root, as this process knows them: their names, their indexes (cached
 * for good: segments are immutable), recently read members, and the sweep that deletes segments no
 * store needs any more. One per {@link Storage} per process.
 *
 * <pre>
 * _segments/&lt;version&gt;-&lt;segment id&gt;.segment     one group commit of several stores
 * _segments/&lt;version&gt;-&lt;segment id&gt;-h.segment   the same bytes, written by a hedge
 * </pre>
 *
 * A segment member is one more candidate commit of its store (docs/protocol.md, "Group commit"):
 * loads read it like a changelog and follow the same parent ids.
 *
 * <p>Segments appended to a journal ({@link SegmentJournalReader}) are listed here like segment
 * files, each under a record name ({@code <journal>@<offset>}); reading a member reads its record.
 */
public final class SegmentCatalog {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentCatalog.class);

  public static final String SEGMENT_DIR = "_segments/";
  public static final String SEGMENT_SUFFIX = ".segment";
  public static final String HEDGE_SEGMENT_SUFFIX = "-h.segment";

  /** Decoded segments kept for loads that restore several stores from the same segments. */
  private static final long MAX_CACHED_SEGMENT_BYTES = 128L << 20;

  /** How often a process sweeps one storage root at most (maintenance calls it far more often). */
  static final long SWEEP_INTERVAL_MILLIS = 60_000;

  private static final Map<Storage, SegmentCatalog> BY_STORAGE =
      Collections.synchronizedMap(new WeakHashMap<>());

  /** A segment file name, parsed. */
  public record SegmentName(String name, long version, long segmentId, boolean hedge) {}

  /** A listed segment. */
  public record SegmentFile(SegmentName name, long lastModifiedMillis) {}

  private final Storage storage;
  private final SegmentJournalReader journals;

  /** Journals a writer of this process may still append to: never swept. */
  private final java.util.Set<String> openJournals = ConcurrentHashMap.newKeySet();

  private final Map<String, Segment.Index> indexes = new ConcurrentHashMap<>();
  private final LinkedHashMap<String, Decoded> decoded = new LinkedHashMap<>(16, 0.75f, true);
  private long decodedBytes;
  private final ReentrantLock sweepLock = new ReentrantLock();
  private volatile long lastSweepMillis;

  private SegmentCatalog(Storage storage) {
    this.storage = storage;
    this.journals = new SegmentJournalReader(storage);
  }

  /** The catalog of {@code storage} in this process. */
  public static SegmentCatalog of(Storage storage) {
    synchronized (BY_STORAGE) {
      return BY_STORAGE.computeIfAbsent(storage, SegmentCatalog::new);
    }
  }

  public static String name(long version, long segmentId) {
    return SEGMENT_DIR + versionAndId(version, segmentId) + SEGMENT_SUFFIX;
  }

  public static String hedgeName(long version, long segmentId) {
    return SEGMENT_DIR + versionAndId(version, segmentId) + HEDGE_SEGMENT_SUFFIX;
  }

  private static String versionAndId(long version, long id) {
    return String.format("%020d", version) + "-" + HexFormat.of().toHexDigits(id);
  }

  /** Parses a segment name (with or without directories); null if it is not one. */
  public static SegmentName parse(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    boolean hedge = base.endsWith(HEDGE_SEGMENT_SUFFIX);
    String suffix = hedge ? HEDGE_SEGMENT_SUFFIX : SEGMENT_SUFFIX;
    if (!base.endsWith(suffix)) {
      return null;
    }
    long[] parsed =
        StoreLayout.parseVersionAndId(base.substring(0, base.length() - suffix.length()));
    return parsed == null ? null : new SegmentName(name, parsed[0], parsed[1], hedge);
  }

  /**
   * Lists the segments by version (one storage list call), the records of segment journals included
   * (each journal read on from where this process last stopped).
   */
  public NavigableMap<Long, List<SegmentFile>> list() {
    return list(storage.list(SEGMENT_DIR));
  }

  private NavigableMap<Long, List<SegmentFile>> list(List<FileInfo> listed) {
    NavigableMap<Long, List<SegmentFile>> byVersion = new TreeMap<>();
    for (FileInfo f : listed) {
      SegmentName n = parse(f.name());
      if (n != null) {
        byVersion
            .computeIfAbsent(n.version(), v -> new ArrayList<>())
            .add(new SegmentFile(n, f.lastModifiedMillis()));
      } else if (SegmentJournalReader.parseJournal(f.name()) != null) {
        for (SegmentJournalReader.Record r : journals.records(f.name())) {
          indexes.putIfAbsent(r.name(), r.index());
          long version = r.index().version();
          byVersion
              .computeIfAbsent(version, v -> new ArrayList<>())
              .add(
                  new SegmentFile(
                      new SegmentName(r.name(), version, r.segmentId(), false),
                      f.lastModifiedMillis()));
        }
      }
    }
    return byVersion;
  }

  /** A journal this process's writer opened: the sweep leaves it alone until it is closed. */
  void journalOpened(String name) {
    openJournals.add(name);
  }

  void journalClosed(String name) {
    openJournals.remove(name);
  }

  /** How errors name a segment file or a journal record. */
  String location(String name) {
    return SegmentJournalReader.isRecord(name)
        ? journals.location(name)
        : FramedFile.location(storage, name);
  }

  /**
   * A segment's index, read without its members the first time and cached after.
   *
   * @throws CorruptFileException the index does not verify (a torn or foreign file)
   * @throws MissingFileException the segment is gone
   */
  public Segment.Index index(String name) {
    Segment.Index cached = indexes.get(name);
    if (cached != null) {
      return cached;
    }
    String location = location(name);
    if (SegmentJournalReader.isRecord(name)) {
      Segment.Index index = decoded(name).index();
      indexes.put(name, index);
      return index;
    }
    Segment.Index index;
    try (InputStream in = FramedFile.openPayloadPrefix(storage, name, FileKind.SEGMENT)) {
      index = Segment.readIndex(in, location);
    } catch (IOException e) {
      throw new io.streamstate.core.error.RetryableException(
          "Cannot read " + location + ": " + e, e);
    }
    SegmentName n = parse(name);
    if (n != null && index.version() != n.version()) {
      throw new CorruptFileException(
          location
              + " is corrupt: it holds version "
              + index.version()
              + ", not what its name says");
    }
    indexes.put(name, index);
    return index;
  }

  /** Remembers the index of a segment this process wrote, so that retention never reads it. */
  void remember(String name, Segment segment) {
    List<Segment.IndexEntry> entries = new ArrayList<>();
    for (Segment.Member m : segment.members()) {
      entries.add(
          new Segment.IndexEntry(
              m.storePrefix(), m.commitId(), m.parentId(), m.changelog().length));
    }
    indexes.put(name, new Segment.Index(segment.version(), entries));
  }

  /**
   * Reads the member of store {@code storePrefix} with commit id {@code commitId} from a segment,
   * verifying the whole segment (once per process while it stays cached).
   *
   * @throws CorruptFileException the segment does not verify, or holds no such member
   */
  public Changelog member(String name, String storePrefix, long commitId) {
    Decoded d = decoded(name);
    Segment segment = d.segment();
    String location = location(name);
    for (Segment.Member m : segment.members()) {
      if (m.storePrefix().equals(storePrefix) && m.commitId() == commitId) {
        String where = location + " (member " + storePrefix + ")";
        Changelog changelog = Changelog.decodeStored(m.changelog(), d.formatVersion(), where);
        if (changelog.version() != segment.version()
            || changelog.commitId() != commitId
            || changelog.parentId() != m.parentId()) {
          throw new CorruptFileException(
              where + " is corrupt: its changes name another version or commit than its index");
        }
        return changelog;
      }
    }
    throw new CorruptFileException(
        location
            + " is corrupt: it holds no commit "
            + StoreLayout.formatId(commitId)
            + " of store "
            + storePrefix);
  }

  /** A verified segment and the format version that says how its members store changes. */
  private record Decoded(Segment segment, int formatVersion) {
    Segment.Index index() {
      List<Segment.IndexEntry> entries = new ArrayList<>();
      for (Segment.Member m : segment.members()) {
        entries.add(
            new Segment.IndexEntry(
                m.storePrefix(), m.commitId(), m.parentId(), m.changelog().length));
      }
      return new Segment.Index(segment.version(), entries);
    }
  }

  private Decoded decoded(String name) {
    synchronized (decoded) {
      Decoded d = decoded.get(name);
      if (d != null) {
        return d;
      }
    }
    String location = location(name);
    FramedFile.Payload payload =
        SegmentJournalReader.isRecord(name)
            ? journals.readRecord(name)
            : FramedFile.read(storage, name, FileKind.SEGMENT);
    Decoded d = new Decoded(Segment.decode(payload.bytes(), location), payload.formatVersion());
    synchronized (decoded) {
      if (decoded.put(name, d) == null) {
        decodedBytes += payload.bytes().length;
      }
      var it = decoded.entrySet().iterator();
      while (decodedBytes > MAX_CACHED_SEGMENT_BYTES && decoded.size() > 1 && it.hasNext()) {
        var eldest = it.next();
        decodedBytes -= bytesOf(eldest.getValue().segment());
        it.remove();
      }
    }
    return d;
  }

  private static long bytesOf(Segment s) {
    long n = 0;
    for (Segment.Member m : s.members()) {
      n += m.changelog().length + m.storePrefix().length() + 24;
    }
    return n;
  }

  /**
   * The newest version above {@code above} with a segment member of {@code storePrefix}, or -1.
   * Unreadable segments are skipped (retention only asks whether another instance is ahead).
   */
  public long newestVersionOf(String storePrefix, long above) {
    for (Map.Entry<Long, List<SegmentFile>> e : list().descendingMap().entrySet()) {
      if (e.getKey() <= above) {
        break;
      }
      for (SegmentFile f : e.getValue()) {
        try {
          for (Segment.IndexEntry entry : index(f.name().name()).entries()) {
            if (entry.storePrefix().equals(storePrefix)) {
              return e.getKey();
            }
          }
        } catch (CorruptFileException | MissingFileException unreadable) {
          // a torn or vanished segment holds nothing to load
        }
      }
    }
    return -1;
  }

  // ---------------------------------------------------------------------------------------------
  // Sweep (docs/protocol.md, "Group commit", g4)

  /** Sweeps unless this process swept this root within the last minute; returns files deleted. */
  public int maybeSweep(StoreOptions options) {
    if (System.currentTimeMillis() - lastSweepMillis < SWEEP_INTERVAL_MILLIS) {
      return 0;
    }
    return sweep(options);
  }

  /**
   * Deletes every segment whose members no store needs: a member is needed until its store has a
   * retention base (the newest valid snapshot on the store's newest lineage at or below the oldest
   * version to keep, the same base per-store retention chooses) at or above its version. Also
   * deletes unreadable segments older than the torn-file grace period.
   *
   * @return the number of files deleted
   */
  public int sweep(StoreOptions options) {
    if (!sweepLock.tryLock()) {
      return 0; // another thread of this process is sweeping this root
    }
    try {
      lastSweepMillis = System.currentTimeMillis();
      parentsRead.clear();
      long now = System.currentTimeMillis();
      List<FileInfo> files = storage.list(SEGMENT_DIR);
      NavigableMap<Long, List<SegmentFile>> listed = list(files);
      Map<String, List<Member>> byStore = new HashMap<>();
      Map<SegmentFile, Segment.Index> readable = new LinkedHashMap<>();
      List<String> toDelete = new ArrayList<>();
      java.util.Set<String> liveJournals = new java.util.HashSet<>();
      for (List<SegmentFile> ofVersion : listed.values()) {
        for (SegmentFile f : ofVersion) {
          try {
            Segment.Index index = index(f.name().name());
            readable.put(f, index);
            for (Segment.IndexEntry e : index.entries()) {
              byStore
                  .computeIfAbsent(e.storePrefix(), p -> new ArrayList<>())
                  .add(new Member(f, e.commitId(), e.parentId()));
            }
          } catch (CorruptFileException unreadable) {
            if (now - f.lastModifiedMillis() >= options.tornFileGraceMillis()
                && !SegmentJournalReader.isRecord(f.name().name())) {
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
        if (SegmentJournalReader.isRecord(name)) {
          if (!dead) {
            liveJournals.add(SegmentJournalReader.journalOf(name));
          }
        } else if (dead) {
          toDelete.add(name);
        }
      }
      // A journal goes as a whole: once every record in it is dead, and once no writer can still
      // append to it (its close-by time plus the grace period has passed).
      for (FileInfo f : files) {
        SegmentJournalReader.JournalName j = SegmentJournalReader.parseJournal(f.name());
        if (j != null
            && !liveJournals.contains(f.name())
            && !openJournals.contains(f.name())
            && now >= j.closeByMillis() + options.tornFileGraceMillis()) {
          toDelete.add(f.name());
        }
      }
      Storages.deleteAll(storage, toDelete);
      for (String name : toDelete) {
        if (SegmentJournalReader.parseJournal(name) != null) {
          journals.forget(name);
          indexes.keySet().removeIf(n -> n.startsWith(name + "@"));
          synchronized (decoded) {
            var it = decoded.entrySet().iterator();
            while (it.hasNext()) {
              var d = it.next();
              if (d.getKey().startsWith(name + "@")) {
                decodedBytes -= bytesOf(d.getValue().segment());
                it.remove();
              }
            }
          }
          continue;
        }
        indexes.remove(name);
        synchronized (decoded) {
          Decoded d = decoded.remove(name);
          if (d != null) {
            decodedBytes -= bytesOf(d.segment());
          }
        }
      }
      if (!toDelete.isEmpty()) {
        LOG.info(
            "Segment sweep of {} deleted {} segment files", storage.describe(), toDelete.size());
      }
      return toDelete.size();
    } finally {
      sweepLock.unlock();
    }
  }

  private record Member(SegmentFile file, long commitId, long parentId) {
    long version() {
      return file.name().version();
    }
  }

  /**
   * The retention base of one store, or -1 if it has none yet: walks its newest lineage back
   * through segment members and changelog files, then takes the newest snapshot on it at or below
   * the oldest version to keep.
   */
  private long retentionBase(String prefix, List<Member> members, StoreOptions options) {
    long segmentTop = -1;
    for (Member m : members) {
      segmentTop = Math.max(segmentTop, m.version());
    }
    if (segmentTop - options.minVersionsToRetain() + 1 <= 1) {
      return -1; // too young for any base: skip listing the store
    }
    StoreLayout layout = new StoreLayout(prefix);
    // Every candidate commit by version: segment members, and changelog files (parent read lazily).
    NavigableMap<Long, List<Candidate>> byVersion = new TreeMap<>();
    for (Member m : members) {
      byVersion
          .computeIfAbsent(m.version(), v -> new ArrayList<>())
          .add(
              new Candidate(
                  m.version(), m.commitId(), m.parentId(), m.file().lastModifiedMillis(), null));
    }
    for (FileInfo f : storage.list(layout.changelogDir())) {
      StoreLayout.ChangelogName n = StoreLayout.parseChangelog(f.name());
      if (n != null) {
        byVersion
            .computeIfAbsent(n.version(), v -> new ArrayList<>())
            .add(new Candidate(n.version(), n.commitId(), 0, f.lastModifiedMillis(), n));
      }
    }
    if (byVersion.isEmpty()) {
      return -1;
    }
    long top = byVersion.lastKey();
    long oldestToKeep = top - options.minVersionsToRetain() + 1;
    if (oldestToKeep <= 1) {
      return -1;
    }
    List<StoreLayout.SnapshotName> snapshots = new ArrayList<>();
    for (FileInfo f : storage.list(layout.snapshotDir())) {
      StoreLayout.SnapshotName n = StoreLayout.parseSnapshot(f.name());
      if (n != null && n.version() <= oldestToKeep) {
        snapshots.add(n);
      }
    }
    snapshots.sort(Comparator.comparingLong(StoreLayout.SnapshotName::version).reversed());
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
      base = Math.min(base, baseOnLineage(byVersion, top, c.commitId(), parent, snapshots));
    }
    return any ? base : -1;
  }

  /** The newest usable snapshot on the lineage of commit {@code id} of {@code top}, or -1. */
  private long baseOnLineage(
      NavigableMap<Long, List<Candidate>> byVersion,
      long top,
      long id,
      long parent,
      List<StoreLayout.SnapshotName> snapshots) {
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
    for (StoreLayout.SnapshotName s : snapshots) {
      Long onLineage = lineage.get(s.version());
      if (onLineage == null || onLineage != s.commitId()) {
        continue;
      }
      try {
        FramedFile.verify(storage, s.name(), FileKind.SNAPSHOT_MANIFEST);
        return s.version();
      } catch (CorruptFileException | MissingFileException unusable) {
        // not a base: try an older one
      }
    }
    return -1;
  }

  /** A commit the sweep considers; {@code changelog} is null for a segment member. */
  private record Candidate(
      long version,
      long commitId,
      long parentId,
      long mtime,
      StoreLayout.ChangelogName changelog) {}

  /** Parent ids read from changelog files during one sweep (empty: the file does not verify). */
  private final Map<String, java.util.Optional<Long>> parentsRead = new HashMap<>();

  /** The parent id of a candidate, or null if its changelog does not verify. */
  private Long parentOf(Candidate c) {
    if (c.changelog() == null) {
      return c.parentId();
    }
    return parentsRead
        .computeIfAbsent(c.changelog().name(), n -> java.util.Optional.ofNullable(readParent(c)))
        .orElse(null);
  }

  private Long readParent(Candidate c) {
    try {
      String location = FramedFile.location(storage, c.changelog().name());
      FramedFile.Payload payload =
          FramedFile.read(storage, c.changelog().name(), FileKind.CHANGELOG);
      Changelog changelog =
          Changelog.decodeStored(payload.bytes(), payload.formatVersion(), location);
      return changelog.commitId() == c.commitId() ? changelog.parentId() : null;
    } catch (CorruptFileException | MissingFileException unusable) {
      return null;
    }
  }
}
