package io.streamstate.core.engine.recovery;

import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotHistory;
import io.streamstate.core.engine.snapshot.SnapshotRestorer;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * What a load of one version of one store would read, found without loading it: no local instance
 * (no RocksDB), nothing written. For tools that check a checkpoint (the streamstate CLI's {@code
 * inspect} and {@code verify}); the engine's loads use {@link LineageLoader}.
 *
 * <p>The rules are a load's (docs/protocol.md, "Load and recovery"), from the same pieces: the
 * version's commit is picked as l2 picks it ({@link ChangeFeed#newestValidCommit} over a {@link
 * DurableListing}: the newest commit whose changelog verifies, or, with none left, the version's
 * snapshot); the lineage is walked back by parent ids as l3 walks it ({@link ChangeFeed#walkBack},
 * which reads each commit's copies as a load reads them); the base is the newest usable snapshot
 * met on that lineage, usable meaning {@link SnapshotRestorer#verify} passes (the checks a restore
 * makes), else the empty state at version 0. A load fails (l5) exactly when no base lies at or
 * above the version where the walk could not go on, naming the file it could not read.
 *
 * <p>Unlike a load, the walk goes on below the base as far as the changelogs reach, so that the
 * result also says the oldest version of this lineage that a load could start from ({@link
 * Result#oldestLoadable}).
 *
 * @apiNote Internal: public for the streamstate CLI ({@code cli} module), which checks checkpoints
 *     without loading them; not an API.
 */
public final class LineageCheck {
  /** How much of a snapshot is read to decide whether it is usable. */
  public enum SnapshotChecks {
    /** The manifest and every SST it names, each read whole and verified (as a restore would). */
    FULL,
    /**
     * The manifest read and verified; each SST it names only looked up in a listing of the store's
     * {@code sst/} (present, with the framed length of the payload the manifest lists). Cheaper: no
     * SST is read.
     */
    MANIFESTS
  }

  /**
   * One commit on the lineage: its version, commit id and parent's, and where it was read (a
   * changelog, or a segment or segment-journal record holding it: {@code inSegment}).
   */
  public record Commit(
      long version, long commitId, long parentId, String file, boolean inSegment) {}

  /**
   * What a load of {@link #version} would do.
   *
   * @param lineage the commits the walk read, newest first: from the version down to where it
   *     stopped (possibly below the base)
   * @param commitIds version to commit id of the lineage, as far as it is known (the commit of the
   *     version where the walk stopped included: its child names it)
   * @param base the snapshot a load restores, or null when it starts from the empty state or fails
   * @param baseVersion the base's version: 0 for the empty state, -1 when a load fails
   * @param oldestLoadable the oldest version of this lineage a load could stand on (a usable
   *     snapshot on it, or 0 when the changelogs reach the empty state); -1 when none
   * @param skipped files a load treats as absent or unusable (changelogs of the version that do not
   *     verify, snapshots that are unusable), as their errors name them
   * @param failure why a load fails, naming the file; null when it succeeds
   */
  public record Result(
      String store,
      long version,
      List<Commit> lineage,
      Map<Long, Long> commitIds,
      StoreLayout.SnapshotName base,
      long baseVersion,
      long oldestLoadable,
      List<String> skipped,
      StreamStateException failure) {
    /** Whether a load of the version succeeds. */
    public boolean loadable() {
      return failure == null;
    }

    /** Whether commit {@code commitId} of {@code version} lies on the lineage. */
    public boolean onLineage(long version, long commitId) {
      Long id = commitIds.get(version);
      return id != null && id == commitId;
    }
  }

  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final SegmentCatalog catalog;
  private final SnapshotChecks checks;

  /** Snapshots checked, by name: null if usable, else why not. Each is checked once. */
  private final Map<String, String> unusable = new HashMap<>();

  /** SSTs listed under the store's {@code sst/}, by name (MANIFESTS checks), listed when needed. */
  private Map<String, Long> listedSsts;

  /**
   * @param storeName how messages name the store
   * @param catalog the segments of {@code storage} (their members are commits too)
   */
  public LineageCheck(
      String storeName,
      Storage storage,
      StoreLayout layout,
      SegmentCatalog catalog,
      SnapshotChecks checks) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.catalog = catalog;
    this.checks = checks;
  }

  /** What a load of {@code version} would read and whether it would succeed. */
  public Result check(long version) {
    return check(version, OptionalLong.empty());
  }

  /**
   * As {@link #check(long)}, for a load of commit {@code commitId} of {@code version} exactly, when
   * present (checkpoint format v2: the commit Spark's commit log names), else of its newest valid
   * commit.
   */
  public Result check(long version, OptionalLong commitId) {
    if (version < 0) {
      throw new IllegalArgumentException("version must be >= 0: " + version);
    }
    List<String> skipped = new ArrayList<>();
    if (version == 0) {
      return new Result(storeName, 0, List.of(), Map.of(0L, 0L), null, 0, 0, skipped, null);
    }
    DurableListing listing = DurableListing.list(storage, layout, catalog);
    ChangeFeed feed = new ChangeFeed(storeName, storage, layout, catalog);
    String context = "Cannot load version " + version + " of store " + storeName;
    List<Commit> lineage = new ArrayList<>();
    NavigableMap<Long, Long> commitIds = new TreeMap<>();
    boolean reachesEmptyState = false;
    long stoppedAt;
    StreamStateException stop;
    ChangeFeed.Step top;
    try {
      top = feed.topOf(listing, version, commitId, skipped);
    } catch (CorruptFileException e) {
      // The commit asked for has copies, and none verifies.
      return new Result(storeName, version, lineage, commitIds, null, -1, -1, skipped, e);
    }
    if (top == null) {
      // l2: no changelog of the version verifies (or none of the commit asked for); a load then
      // takes the version's snapshot (of that commit).
      List<StoreLayout.SnapshotName> snaps = new ArrayList<>();
      for (StoreLayout.SnapshotName s : listing.snapshots().getOrDefault(version, List.of())) {
        if (commitId.isEmpty() || s.commitId() == commitId.getAsLong()) {
          snaps.add(s);
        }
      }
      if (snaps.isEmpty()) {
        StreamStateException none =
            commitId.isEmpty()
                ? feed.noChangelogOf(version, listing, skipped)
                : new MissingFileException(
                    context
                        + ": commit "
                        + StoreLayout.formatId(commitId.getAsLong())
                        + " of version "
                        + version
                        + " (the one asked for) has no changelog ("
                        + FramedFile.location(
                            storage, layout.changelog(version, commitId.getAsLong()))
                        + ") and no snapshot",
                    FramedFile.location(storage, layout.changelog(version, commitId.getAsLong())));
        return new Result(storeName, version, lineage, commitIds, null, -1, -1, skipped, none);
      }
      long id = snaps.get(snaps.size() - 1).commitId();
      commitIds.put(version, id);
      stoppedAt = version;
      String missing = FramedFile.location(storage, layout.changelog(version, id));
      stop =
          listing.copiesOf(version, id).isEmpty()
              ? new MissingFileException(
                  context
                      + ": no changelog of version "
                      + version
                      + " is left ("
                      + missing
                      + ") and its snapshot is unusable",
                  missing)
              : new CorruptFileException(
                  context
                      + ": no copy of commit "
                      + StoreLayout.formatId(id)
                      + " of version "
                      + version
                      + " verifies, and its snapshot is unusable");
    } else {
      ChangeFeed.WalkBack back = feed.walkBack(listing, top, 1, context, skipped);
      List<ChangeFeed.Step> steps = back.steps();
      for (int i = 0; i < steps.size(); i++) {
        ChangeFeed.Step s = steps.get(i);
        // A step's parent is the commit of the step after it (the walk dropped changelogs it held
        // past its memory bound, not their ids); the oldest one's is the one the walk expected.
        long parent = i + 1 < steps.size() ? steps.get(i + 1).commitId() : back.expected();
        lineage.add(
            new Commit(
                s.source.version(), s.commitId(), parent, s.source.file(), s.source.inSegment()));
        commitIds.put(s.source.version(), s.commitId());
      }
      stoppedAt = back.stoppedAt();
      stop = back.stop();
      if (stoppedAt >= 1) {
        commitIds.put(stoppedAt, back.expected()); // its child names it
      } else if (back.expected() == 0) {
        reachesEmptyState = true;
        commitIds.put(0L, 0L);
      } else {
        Commit first = lineage.get(lineage.size() - 1);
        stop =
            new CorruptFileException(
                context
                    + ": the changelog of version 1 on its lineage names parent commit "
                    + StoreLayout.formatId(back.expected())
                    + " instead of the empty state ("
                    + FramedFile.location(storage, first.file())
                    + ")");
      }
    }
    // The snapshots on the lineage at or above where the walk stopped: a load stands on the
    // newest usable one it meets walking down (l3).
    List<StoreLayout.SnapshotName> onLineage = new ArrayList<>();
    for (List<StoreLayout.SnapshotName> names :
        listing.snapshots().subMap(Math.max(1, stoppedAt), true, version, true).values()) {
      for (StoreLayout.SnapshotName s : names) {
        Long id = commitIds.get(s.version());
        if (id != null && id == s.commitId()) {
          onLineage.add(s);
        }
      }
    }
    // Newest first; of one commit, the primary before its hedge copy (as a load tries them).
    onLineage.sort(
        Comparator.comparingLong(StoreLayout.SnapshotName::version)
            .reversed()
            .thenComparing(StoreLayout.SnapshotName::hedge));
    StoreLayout.SnapshotName base = null;
    for (StoreLayout.SnapshotName s : onLineage) {
      if (isUsable(s, skipped)) {
        base = s;
        break;
      }
    }
    long oldest = -1;
    if (reachesEmptyState) {
      oldest = 0;
    } else {
      List<StoreLayout.SnapshotName> oldestFirst = new ArrayList<>(onLineage);
      Collections.reverse(oldestFirst);
      for (StoreLayout.SnapshotName s : oldestFirst) {
        if (base != null && s.version() > base.version()) {
          break;
        }
        if (isUsable(s, new ArrayList<>())) {
          oldest = s.version();
          break;
        }
      }
    }
    if (base != null) {
      return new Result(
          storeName, version, lineage, commitIds, base, base.version(), oldest, skipped, null);
    }
    if (reachesEmptyState) {
      return new Result(storeName, version, lineage, commitIds, null, 0, 0, skipped, null);
    }
    return new Result(
        storeName, version, lineage, commitIds, null, -1, -1, skipped, withSkipped(stop, skipped));
  }

  /** Whether snapshot {@code s} is usable; an unusable one's error joins {@code skipped}. */
  private boolean isUsable(StoreLayout.SnapshotName s, List<String> skipped) {
    if (!unusable.containsKey(s.name())) {
      try {
        verify(s);
        unusable.put(s.name(), null);
      } catch (CorruptFileException | MissingFileException e) {
        unusable.put(s.name(), e.getMessage());
      }
    }
    String why = unusable.get(s.name());
    if (why != null && !skipped.contains(why)) {
      skipped.add(why);
    }
    return why == null;
  }

  private SnapshotManifest verify(StoreLayout.SnapshotName s) {
    SnapshotRestorer restorer = new SnapshotRestorer(storage, new SnapshotHistory());
    if (checks == SnapshotChecks.FULL) {
      return restorer.verify(s);
    }
    SnapshotManifest manifest = StoreFiles.readManifest(storage, s);
    if (listedSsts == null) {
      listedSsts = new HashMap<>();
      for (FileInfo f : storage.list(layout.sstDir())) {
        listedSsts.put(f.name(), f.length());
      }
    }
    for (SnapshotManifest.Entry e : manifest.files()) {
      if (!e.isShared()) {
        continue;
      }
      Long length = listedSsts.get(e.sharedName());
      String location = FramedFile.location(storage, e.sharedName());
      if (length == null) {
        throw new MissingFileException(
            location + " is missing (snapshot " + s.version() + " names it)", location);
      }
      if (length != FramedFile.framedLength(e.length())) {
        throw new CorruptFileException(
            location
                + " is corrupt: it is "
                + length
                + " bytes, but snapshot "
                + s.version()
                + " lists a payload of "
                + e.length()
                + " ("
                + FramedFile.framedLength(e.length())
                + " bytes framed)");
      }
    }
    return manifest;
  }

  private static StreamStateException withSkipped(StreamStateException e, List<String> skipped) {
    if (skipped.isEmpty() || e.getMessage().contains("Skipped as unusable")) {
      return e;
    }
    String message =
        e.getMessage()
            + (e.getMessage().endsWith(".") ? "" : ".")
            + " Skipped as unusable: "
            + String.join("; ", skipped);
    if (e instanceof MissingFileException m) {
      return new MissingFileException(message, m.location());
    }
    return new CorruptFileException(message, e);
  }
}
