package io.streamstate.core.engine.recovery;

import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Segment;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * The durable files of one store by version, as one load sees them: changelogs and segment names
 * listed at once, segment indexes read per version when the load reaches it, snapshots listed on
 * demand (l2, l3 of docs/protocol.md, "Load and recovery").
 */
final class DurableListing {
  /**
   * One candidate commit of the store: a changelog file, or the store's member of a segment ({@code
   * file} is then the segment's name).
   */
  record Candidate(
      String file, long version, long commitId, boolean hedge, long mtime, boolean inSegment) {}

  private final Storage storage;
  private final StoreLayout layout;
  private final SegmentCatalog catalog;
  private final NavigableMap<Long, List<StoreFiles.ListedChangelog>> changelogs;
  private final NavigableMap<Long, List<SegmentCatalog.SegmentFile>> segments;
  private final Map<Long, List<Candidate>> candidates = new HashMap<>();
  private final List<String> unreadableSegments = new ArrayList<>();
  private NavigableMap<Long, List<StoreLayout.SnapshotName>> snapshots;

  private DurableListing(
      Storage storage,
      StoreLayout layout,
      SegmentCatalog catalog,
      NavigableMap<Long, List<StoreFiles.ListedChangelog>> changelogs,
      NavigableMap<Long, List<SegmentCatalog.SegmentFile>> segments) {
    this.storage = storage;
    this.layout = layout;
    this.catalog = catalog;
    this.changelogs = changelogs;
    this.segments = segments;
  }

  /** Lists the store's changelogs and the root's segments (two list calls). */
  static DurableListing list(Storage storage, StoreLayout layout, SegmentCatalog catalog) {
    NavigableMap<Long, List<StoreFiles.ListedChangelog>> changelogs = new TreeMap<>();
    for (StoreFiles.ListedChangelog f : StoreFiles.changelogs(storage, layout)) {
      changelogs.computeIfAbsent(f.name().version(), v -> new ArrayList<>()).add(f);
    }
    return new DurableListing(storage, layout, catalog, changelogs, catalog.list());
  }

  /** Every commit of {@code version} found: changelog files, then segment members. */
  List<Candidate> candidates(long version) {
    return candidates.computeIfAbsent(
        version,
        v -> {
          List<Candidate> found = new ArrayList<>();
          for (StoreFiles.ListedChangelog f : changelogs.getOrDefault(v, List.of())) {
            StoreLayout.ChangelogName n = f.name();
            found.add(
                new Candidate(n.name(), v, n.commitId(), n.hedge(), f.lastModifiedMillis(), false));
          }
          for (SegmentCatalog.SegmentFile f : segments.getOrDefault(v, List.of())) {
            String segment = f.name().name();
            try {
              for (Segment.IndexEntry e : catalog.index(segment).entries()) {
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

  /** Segments whose index does not verify, as their errors name them. */
  List<String> unreadableSegments() {
    return unreadableSegments;
  }

  /** Snapshot manifests by version; of one commit, the primary name before the hedge copy. */
  NavigableMap<Long, List<StoreLayout.SnapshotName>> snapshots() {
    if (snapshots == null) {
      snapshots = new TreeMap<>();
      for (StoreLayout.SnapshotName n : StoreFiles.snapshots(storage, layout)) {
        snapshots.computeIfAbsent(n.version(), v -> new ArrayList<>()).add(n);
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
