package io.streamstate.core.engine.recovery;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotRestorer;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.Storage;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.stream.Collectors;

/**
 * Loads a version from a chosen snapshot (docs/protocol.md, "Replay from a snapshot"): the snapshot
 * of exactly {@code snapshotVersion} on the lineage of {@code endVersion}, then that lineage's
 * changelogs up to {@code endVersion}. Unlike a load ({@link LineageLoader}), which takes any base
 * on the lineage and walks on past an unusable snapshot, this fails when the snapshot asked for is
 * absent, of another lineage, or unusable: it exists to read what that snapshot holds (Spark's
 * state data source, {@code snapshotStartBatchId}).
 *
 * <p>Builds the store's {@link LocalInstance}; called under the store's lock.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class SnapshotReplay {
  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final SegmentCatalog catalog;
  private final LocalInstance local;
  private final SnapshotRestorer restorer;
  private final StoreMetrics metrics;
  private final ChangeFeed feed;

  public SnapshotReplay(
      String storeName,
      Storage storage,
      StoreLayout layout,
      SegmentCatalog catalog,
      LocalInstance local,
      SnapshotRestorer restorer,
      StoreMetrics metrics) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.catalog = catalog;
    this.local = local;
    this.restorer = restorer;
    this.metrics = metrics;
    this.feed = new ChangeFeed(storeName, storage, layout, catalog);
  }

  /**
   * Makes the local instance hold {@code endVersion}, restored from the snapshot of {@code
   * snapshotVersion} (version 0: the empty state) with the changelogs after it replayed.
   *
   * @throws IllegalArgumentException {@code snapshotVersion < 0} or {@code endVersion <
   *     snapshotVersion}
   * @throws StreamStateException there is no snapshot of {@code snapshotVersion} on the lineage of
   *     {@code endVersion}
   * @throws CorruptFileException that snapshot, or a changelog after it, does not verify
   * @throws MissingFileException a changelog after it, or a file the snapshot names, is absent
   */
  public void replay(long snapshotVersion, long endVersion) {
    replay(snapshotVersion, endVersion, OptionalLong.empty());
  }

  /**
   * As {@link #replay(long, long)}, on the lineage of commit {@code endCommit} of {@code
   * endVersion} when present (checkpoint format v2).
   */
  public void replay(long snapshotVersion, long endVersion, OptionalLong endCommit) {
    if (snapshotVersion < 0 || endVersion < snapshotVersion) {
      throw new IllegalArgumentException(
          "Cannot replay store "
              + storeName
              + " from snapshot "
              + snapshotVersion
              + " to version "
              + endVersion
              + ": the snapshot version must be 0 or more and at most the end version");
    }
    DurableListing listing = DurableListing.list(storage, layout, catalog);
    ChangeFeed.Lineage after = null;
    long commitAtSnapshot;
    if (endVersion > snapshotVersion) {
      after = feed.walk(listing, snapshotVersion + 1, endVersion, endCommit);
      commitAtSnapshot = after.parentOfFirst();
    } else {
      ChangeFeed.Step top = feed.topOf(listing, endVersion, endCommit, new ArrayList<>());
      // With no changelog of the version left (retention), its snapshot is the lineage's commit.
      commitAtSnapshot = top != null ? top.commitId() : endCommit.orElse(-1);
    }
    if (snapshotVersion == 0) {
      if (after != null && commitAtSnapshot != 0) {
        throw new CorruptFileException(
            "Cannot replay store "
                + storeName
                + " from the empty state: version 1 on the lineage of version "
                + endVersion
                + " names parent commit "
                + StoreLayout.formatId(commitAtSnapshot)
                + " instead of the empty state");
      }
      local.openEmpty();
    } else {
      restore(listing, snapshotVersion, commitAtSnapshot, endVersion);
    }
    if (after != null) {
      try (CloseableIterator<Changelog> changes = after.iterator()) {
        while (changes.hasNext()) {
          local.apply(changes.next());
          metrics.countReplayed();
        }
      }
    }
  }

  /** Restores the snapshot of {@code version} and commit {@code commitId} (-1: any commit). */
  private void restore(DurableListing listing, long version, long commitId, long endVersion) {
    List<StoreLayout.SnapshotName> all = listing.snapshots().getOrDefault(version, List.of());
    List<StoreLayout.SnapshotName> copies = new ArrayList<>();
    for (StoreLayout.SnapshotName s : all) {
      long wanted = commitId != -1 ? commitId : all.get(all.size() - 1).commitId();
      if (s.commitId() == wanted) {
        copies.add(s);
      }
    }
    if (copies.isEmpty()) {
      throw new StreamStateException(
          "Cannot replay store "
              + storeName
              + " from snapshot "
              + version
              + " to version "
              + endVersion
              + ": "
              + (all.isEmpty()
                  ? "there is no snapshot of version "
                      + version
                      + " in "
                      + FramedFile.location(storage, layout.snapshotDir())
                      + " (snapshots of versions "
                      + listing.snapshots().keySet()
                      + ")"
                  : "the snapshots of version "
                      + version
                      + " ("
                      + all.stream()
                          .map(StoreLayout.SnapshotName::name)
                          .collect(Collectors.joining(", "))
                      + ") are of other commits than commit "
                      + StoreLayout.formatId(commitId)
                      + ", the one on the lineage of version "
                      + endVersion));
    }
    List<String> failures = new ArrayList<>();
    for (StoreLayout.SnapshotName copy : copies) {
      local.discard();
      try {
        restorer.restore(copy, local);
        return;
      } catch (CorruptFileException | MissingFileException e) {
        failures.add(e.getMessage());
        local.discard();
      }
    }
    throw new CorruptFileException(
        "Cannot replay store "
            + storeName
            + " from snapshot "
            + version
            + ": it is unusable: "
            + String.join("; ", failures));
  }
}
