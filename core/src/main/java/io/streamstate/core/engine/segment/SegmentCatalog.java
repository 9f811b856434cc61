package io.streamstate.core.engine.segment;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Set;
import java.util.TreeMap;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The segments of one storage root, as this process knows them: their names, their indexes (cached
 * for good: segments are immutable) and recently read members. One per {@link Storage} per process
 * ({@link #of}). Retention's segment sweep reads it to decide which segments no store needs.
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
 *
 * @apiNote Internal: public for the engine's packages, for tests that inspect segments, and for the
 *     streamstate CLI ({@code cli} module), which lists and verifies them; not an API.
 */
public final class SegmentCatalog {
  public static final String SEGMENT_DIR = "_segments/";
  public static final String SEGMENT_SUFFIX = ".segment";
  public static final String HEDGE_SEGMENT_SUFFIX = "-h.segment";

  /** Decoded segments kept for loads that restore several stores from the same segments. */
  private static final long MAX_CACHED_SEGMENT_BYTES = 128L << 20;

  /** The catalogs of a process by storage root (a component of its {@link ProcessResources}). */
  private static final class ByStorage {
    final Map<Storage, SegmentCatalog> catalogs = new WeakHashMap<>();
  }

  /** A segment file name, parsed. */
  public record SegmentName(String name, long version, long segmentId, boolean hedge) {}

  /** A listed segment. */
  public record SegmentFile(SegmentName name, long lastModifiedMillis) {}

  private final Storage storage;
  private final SegmentJournalReader journals;

  /** Journals a writer of this process may still append to: never swept. */
  private final Set<String> openJournals = ConcurrentHashMap.newKeySet();

  private final Map<String, Segment.Index> indexes = new ConcurrentHashMap<>();
  private final LinkedHashMap<String, Decoded> decoded = new LinkedHashMap<>(16, 0.75f, true);
  private long decodedBytes;

  private SegmentCatalog(Storage storage) {
    this.storage = storage;
    this.journals = new SegmentJournalReader(storage);
  }

  /** The catalog of {@code storage} in {@code resources}'s process. */
  public static SegmentCatalog of(ProcessResources resources, Storage storage) {
    ByStorage all = resources.component(ByStorage.class, ByStorage::new);
    synchronized (all) {
      return all.catalogs.computeIfAbsent(storage, SegmentCatalog::new);
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

  /** As {@link #list()}, of names already listed in {@link #SEGMENT_DIR}. */
  public NavigableMap<Long, List<SegmentFile>> list(List<FileInfo> listed) {
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
      throw new RetryableException("Cannot read " + location + ": " + e, e);
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
    indexes.put(name, indexOf(segment));
  }

  /** The index a segment's file holds, built from the segment. */
  private static Segment.Index indexOf(Segment segment) {
    List<Segment.IndexEntry> entries = new ArrayList<>();
    for (Segment.Member m : segment.members()) {
      entries.add(
          new Segment.IndexEntry(
              m.storePrefix(), m.commitId(), m.parentId(), m.changelog().length));
    }
    return new Segment.Index(segment.version(), entries);
  }

  /**
   * Reads the member of store {@code storePrefix} with commit id {@code commitId} from a segment,
   * verifying the whole segment (once per process while it stays cached).
   *
   * @throws CorruptFileException the segment does not verify, or holds no such member
   */
  public Changelog member(String name, String storePrefix, long commitId) {
    return storedMember(name, storePrefix, commitId).decode();
  }

  /**
   * As {@link #member}, with the member's changes left encoded until {@link
   * Changelog.Stored#decode}: the segment verifies whole, and the member's header matches the
   * segment's index.
   *
   * @throws CorruptFileException the segment does not verify, or holds no such member
   */
  public Changelog.Stored storedMember(String name, String storePrefix, long commitId) {
    Decoded d = decoded(name);
    Segment segment = d.segment();
    String location = location(name);
    for (Segment.Member m : segment.members()) {
      if (m.storePrefix().equals(storePrefix) && m.commitId() == commitId) {
        String where = location + " (member " + storePrefix + ")";
        Changelog.Stored stored = Changelog.readStored(m.changelog(), d.formatVersion(), where);
        if (stored.version() != segment.version()
            || stored.commitId() != commitId
            || stored.parentId() != m.parentId()) {
          throw new CorruptFileException(
              where + " is corrupt: its changes name another version or commit than its index");
        }
        return stored;
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
      return indexOf(segment);
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

  /** What a decoded member holds besides its changelog and prefix: its ids and array headers. */
  private static final long MEMBER_OVERHEAD_BYTES = 24;

  private static long bytesOf(Segment s) {
    long n = 0;
    for (Segment.Member m : s.members()) {
      n += m.changelog().length + m.storePrefix().length() + MEMBER_OVERHEAD_BYTES;
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
  // What the sweep (engine.retention.SegmentSweep) asks of the catalog

  /** Whether {@code name} names a record in a segment journal rather than a segment file. */
  public static boolean isJournalRecord(String name) {
    return SegmentJournalReader.isRecord(name);
  }

  /** The journal a record name lies in. */
  public static String journalOf(String recordName) {
    return SegmentJournalReader.journalOf(recordName);
  }

  /** The close-by time a journal's name carries, or -1 if {@code name} names no journal. */
  public static long journalCloseByMillis(String name) {
    SegmentJournalReader.JournalName j = SegmentJournalReader.parseJournal(name);
    return j == null ? -1 : j.closeByMillis();
  }

  /** Whether a writer of this process may still append to the journal {@code name}. */
  public boolean isOpenJournal(String name) {
    return openJournals.contains(name);
  }

  /** Forgets what this process cached of a segment file or journal that was deleted. */
  public void forget(String deleted) {
    if (SegmentJournalReader.parseJournal(deleted) != null) {
      journals.forget(deleted);
      indexes.keySet().removeIf(n -> n.startsWith(deleted + "@"));
      synchronized (decoded) {
        var it = decoded.entrySet().iterator();
        while (it.hasNext()) {
          var d = it.next();
          if (d.getKey().startsWith(deleted + "@")) {
            decodedBytes -= bytesOf(d.getValue().segment());
            it.remove();
          }
        }
      }
      return;
    }
    indexes.remove(deleted);
    synchronized (decoded) {
      Decoded d = decoded.remove(deleted);
      if (d != null) {
        decodedBytes -= bytesOf(d.segment());
      }
    }
  }
}
