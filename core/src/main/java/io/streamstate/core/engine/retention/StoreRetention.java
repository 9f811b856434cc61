package io.streamstate.core.engine.retention;

import io.streamstate.core.engine.StorageClock;
import io.streamstate.core.engine.StoreFiles;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotHistory;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.BooleanSupplier;

/**
 * One store's retention (docs/protocol.md, "Retention", r1-r5): lists the store's files, asks
 * {@link RetentionPlanner} what may go, deletes it. Segments are shared by stores and left to the
 * {@link SegmentSweep}. Runs under the store's maintenance lock.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class StoreRetention {
  private final Storage storage;
  private final StoreLayout layout;
  private final StoreOptions options;
  private final SegmentCatalog catalog;
  private final SnapshotHistory history;
  private final StoreMetrics metrics;
  private final StorageClock clock;

  /** Whether retention listed this store once, and the base it chose last. */
  private boolean ran;

  private long lastBase = -1;

  /** What one run did: the files deleted, and the base it chose (-1: none, nothing deleted). */
  public record Outcome(int deleted, long base) {
    static final Outcome NONE = new Outcome(0, -1);
  }

  /**
   * @param history the snapshots this store instance wrote or restored: r1's hint
   * @param clock the storage's time, which r5 judges an SST's age by
   */
  public StoreRetention(
      Storage storage,
      StoreLayout layout,
      StoreOptions options,
      SegmentCatalog catalog,
      SnapshotHistory history,
      StoreMetrics metrics,
      StorageClock clock) {
    this.storage = storage;
    this.layout = layout;
    this.options = options;
    this.catalog = catalog;
    this.history = history;
    this.metrics = metrics;
    this.clock = clock;
  }

  /**
   * Deletes what loading none of the newest {@code minVersionsToRetain} versions needs (I6), on an
   * instance whose local instance holds {@code localVersion} (I7: if another instance is ahead, it
   * does retention, and this one deletes nothing).
   *
   * @param lineage what the instance knows of its lineage (version to commit id)
   * @param snapshotUploading whether a snapshot of the store is uploading (r5 waits for it)
   */
  public Outcome run(
      long localVersion, NavigableMap<Long, Long> lineage, BooleanSupplier snapshotUploading) {
    long oldestToKeep = RetentionPlanner.oldestToKeep(localVersion, options.minVersionsToRetain());
    if (oldestToKeep < 0) {
      return Outcome.NONE;
    }
    // After a first full run, the base can only move to a snapshot this instance wrote or restored
    // since: skip the listings (maintenance runs often; most runs have nothing to delete).
    if (ran && (oldestToKeep <= lastBase || !history.anyAbove(lastBase, oldestToKeep))) {
      return Outcome.NONE;
    }
    // r1: the newest version from the changelogs (listing is fine: maintenance, not commit).
    List<StoreFiles.ListedChangelog> changelogs = StoreFiles.changelogs(storage, layout);
    long latest = -1;
    for (StoreFiles.ListedChangelog f : changelogs) {
      latest = Math.max(latest, f.name().version());
    }
    // Segment members count too (only segments newer than the local version are read).
    latest = Math.max(latest, catalog.newestVersionOf(layout.prefix(), localVersion));
    if (latest > localVersion) {
      return Outcome.NONE; // another instance is ahead of this one (this one is stale)
    }
    ran = true;
    // r2-r4. Manifests are read once each: usable, and what they reference.
    Map<StoreLayout.SnapshotName, Optional<Set<String>>> manifests = new HashMap<>();
    RetentionPlanner.StorePlan plan =
        RetentionPlanner.planStore(
            changelogs,
            StoreFiles.snapshots(storage, layout),
            oldestToKeep,
            lineage,
            s -> manifests.computeIfAbsent(s, this::sharedSsts).orElse(null));
    if (plan == null) {
      return Outcome.NONE; // no snapshot to stand on: every changelog is still needed
    }
    long base = plan.base().version();
    lastBase = base;
    history.forgetBelow(base);
    List<String> toDelete = plan.toDelete();
    // r5 (I8), not while a snapshot of this store uploads: what it uploaded is referenced only
    // once its manifest is published, and a stalled upload may outlast the grace period. The next
    // run deletes them.
    // Ages are judged by storage time (I14), learned only when some SST is unreferenced; when it
    // cannot be learned, none goes this run.
    if (!snapshotUploading.getAsBoolean()) {
      List<FileInfo> ssts = storage.list(layout.sstDir());
      boolean anyUnreferenced = false;
      for (FileInfo f : ssts) {
        anyUnreferenced |= !plan.referenced().contains(f.name());
      }
      OptionalLong now = anyUnreferenced ? clock.now() : OptionalLong.empty();
      if (now.isPresent()) {
        toDelete.addAll(
            RetentionPlanner.unreferencedSsts(
                ssts, plan.referenced(), now.getAsLong(), options.tornFileGraceMillis()));
      }
    }
    Storages.deleteAll(storage, toDelete);
    metrics.countDeleted(toDelete.size());
    return new Outcome(toDelete.size(), base);
  }

  /** The SSTs a snapshot's manifest names; empty if it is unusable. */
  private Optional<Set<String>> sharedSsts(StoreLayout.SnapshotName s) {
    try {
      return Optional.of(Set.copyOf(StoreFiles.readManifest(storage, s).sharedNames()));
    } catch (CorruptFileException | MissingFileException e) {
      return Optional.empty(); // unusable: neither a base nor a holder of references
    }
  }
}
