package io.streamstate.core.engine;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.commit.AsyncChangelogPublisher;
import io.streamstate.core.engine.commit.ChangelogPublisher;
import io.streamstate.core.engine.commit.CommitPublisher;
import io.streamstate.core.engine.commit.GroupCommitPublisher;
import io.streamstate.core.engine.local.LocalInstance;
import io.streamstate.core.engine.local.LocalSpace;
import io.streamstate.core.engine.local.OpenDatabases;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.recovery.ChangeFeed;
import io.streamstate.core.engine.recovery.LineageLoader;
import io.streamstate.core.engine.recovery.SnapshotReplay;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.retention.StoreRetention;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.snapshot.SnapshotHistory;
import io.streamstate.core.engine.snapshot.SnapshotRestorer;
import io.streamstate.core.engine.snapshot.SnapshotUploader;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.Storage;
import java.nio.file.Path;
import java.util.Objects;
import java.util.concurrent.Executor;

/**
 * Builds a {@link VersionedStore}: takes what the caller shares between stores (storage, memory
 * budget, hedger, group committer) and wires the store's collaborators (Flink's {@code
 * RocksDBKeyedStateBackendBuilder} is the model). Nothing is read until the store's first {@link
 * VersionedStore#begin}.
 *
 * <pre>{@code
 * VersionedStore store =
 *     VersionedStore.builder("op=0/part=3", storage)
 *         .prefix("0/3/")
 *         .localDir(dir)
 *         .memoryBudget(budget)
 *         .options(StoreOptions.defaults())
 *         .open();
 * }</pre>
 *
 * Required: {@link #localDir} and {@link #memoryBudget}. Not thread-safe; build one store per
 * builder.
 */
public final class VersionedStoreBuilder {
  private final String name;
  private final Storage storage;
  private String prefix = "";
  private Path localDir;
  private String localDirSetting = "VersionedStoreBuilder.localDir";
  private StoreOptions options = StoreOptions.defaults();
  private RocksDbMemoryBudget budget;
  private HedgedWriter hedger;
  private GroupCommitter groupCommitter;
  private ProcessResources resources = ProcessResources.shared();

  VersionedStoreBuilder(String name, Storage storage) {
    this.name = Objects.requireNonNull(name, "name");
    this.storage = Objects.requireNonNull(storage, "storage");
  }

  /** The store's prefix in the storage: empty (the default) or ending with {@code /}. */
  public VersionedStoreBuilder prefix(String prefix) {
    this.prefix = Objects.requireNonNull(prefix, "prefix");
    return this;
  }

  /**
   * The store's local directory, which belongs to this store alone: whatever it holds is deleted at
   * {@link #open}, since a local instance is never trusted across instances (its WAL is off).
   */
  public VersionedStoreBuilder localDir(Path localDir) {
    this.localDir = Objects.requireNonNull(localDir, "localDir");
    return this;
  }

  /**
   * The setting that chose the local directory (a configuration key), which a disk-full error names
   * so that the user knows how to move it; default: a generic description.
   */
  public VersionedStoreBuilder localDirSetting(String setting) {
    this.localDirSetting = Objects.requireNonNull(setting, "setting");
    return this;
  }

  /** The store's tuning (default {@link StoreOptions#defaults()}). */
  public VersionedStoreBuilder options(StoreOptions options) {
    this.options = Objects.requireNonNull(options, "options");
    return this;
  }

  /**
   * The owner of what the store shares with the other stores of its process (the segment catalog
   * and sweep of its storage root, the pools of background uploads, the registry of open RocksDB
   * instances); default: {@link ProcessResources#shared()}.
   */
  public VersionedStoreBuilder resources(ProcessResources resources) {
    this.resources = Objects.requireNonNull(resources, "resources");
    return this;
  }

  /** The memory budget the store's RocksDB instance shares with the process's other stores. */
  public VersionedStoreBuilder memoryBudget(RocksDbMemoryBudget budget) {
    this.budget = Objects.requireNonNull(budget, "budget");
    return this;
  }

  /**
   * Hedges the store's durable writes (shared by the stores of a process; null, the default, for
   * plain writes): a changelog write slower than the hedger's deadline is written again under the
   * commit's alternate name, and the first copy to complete commits the version. Snapshot uploads
   * hedge through the hedger's {@link HedgedWriter#companion companion}.
   */
  public VersionedStoreBuilder hedger(HedgedWriter hedger) {
    this.hedger = hedger;
    return this;
  }

  /**
   * Groups the store's sync commits with other stores' (shared by the stores of a storage root in a
   * process; null, the default, for one changelog per commit): commits that stores make together
   * are published as one segment (docs/protocol.md, "Group commit"). Async stores ignore it.
   */
  public VersionedStoreBuilder groupCommitter(GroupCommitter groupCommitter) {
    this.groupCommitter = groupCommitter;
    return this;
  }

  /**
   * Opens the store: empties its local directory and wires its collaborators.
   *
   * @throws IllegalStateException the local directory or the memory budget was not given
   * @throws IllegalArgumentException the prefix does not end with {@code /}, or the group committer
   *     writes to another storage
   */
  public VersionedStore open() {
    if (localDir == null || budget == null) {
      throw new IllegalStateException(
          "Store " + name + ": a local directory and a memory budget are required");
    }
    if (groupCommitter != null && groupCommitter.storage() != storage) {
      throw new IllegalArgumentException(
          "Store " + name + ": its group committer writes to another storage");
    }
    StoreLayout layout = new StoreLayout(prefix);
    StoreMetrics metrics = new StoreMetrics(ProcessMetrics.of(resources));
    SegmentCatalog catalog = SegmentCatalog.of(resources, storage);
    StorageClock clock = StorageClock.of(resources, storage);
    LocalInstance local =
        LocalInstance.create(
            name,
            budget,
            OpenDatabases.of(resources),
            LocalSpace.of(name, localDir, localDirSetting, resources));
    // How commits become durable, chosen once: the strategy never branches on the commit path.
    ChangelogPublisher changelogs = new ChangelogPublisher(name, storage, layout, hedger);
    AsyncChangelogPublisher async =
        options.isAsync()
            ? new AsyncChangelogPublisher(
                resources,
                name,
                storage,
                layout,
                options.asyncMaxLagVersions(),
                changelogs,
                metrics::countPublished)
            : null;
    CommitPublisher publisher;
    if (async != null) {
      publisher = async;
    } else if (groupCommitter != null) {
      publisher = new GroupCommitPublisher(groupCommitter, layout.prefix(), changelogs);
    } else {
      publisher = changelogs;
    }
    SnapshotHistory history = new SnapshotHistory();
    // Snapshot files are larger and rarer than commits: their own latencies and hedge budget.
    SnapshotUploader uploader =
        new SnapshotUploader(
            name,
            storage,
            layout,
            options,
            hedger == null ? null : hedger.companion(),
            metrics,
            clock);
    SnapshotRestorer restorer = new SnapshotRestorer(storage, history);
    LineageLoader loader =
        new LineageLoader(
            name, storage, layout, options, catalog, local, restorer, changelogs, async, metrics);
    return new VersionedStore(
        new Parts(
            name,
            layout,
            options,
            metrics,
            local,
            publisher,
            loader,
            history,
            uploader,
            SnapshotUploader.background(resources),
            new StoreRetention(storage, layout, options, catalog, history, metrics, clock),
            SegmentSweep.of(resources, storage),
            new SnapshotReplay(name, storage, layout, catalog, local, restorer, metrics),
            new ChangeFeed(name, storage, layout, catalog)));
  }

  /** A store's collaborators, as {@link #open} wired them. */
  record Parts(
      String name,
      StoreLayout layout,
      StoreOptions options,
      StoreMetrics metrics,
      LocalInstance local,
      CommitPublisher publisher,
      LineageLoader loader,
      SnapshotHistory history,
      SnapshotUploader uploader,
      Executor background,
      StoreRetention retention,
      SegmentSweep sweep,
      SnapshotReplay replay,
      ChangeFeed changeFeed) {}
}
