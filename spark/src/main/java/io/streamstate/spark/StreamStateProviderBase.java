package io.streamstate.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.VersionedStoreBuilder;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.Changelog;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.spark.shared.ConfigWarnings;
import io.streamstate.spark.shared.Hedgers;
import io.streamstate.spark.shared.SparkLine;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import java.util.function.Function;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.execution.streaming.state.StateStoreProviderId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@code StateStoreProvider} over the streamstate engine, as every Spark line shares it: users
 * set {@code
 * spark.sql.streaming.stateStore.providerClass=io.streamstate.spark.StreamStateProvider}, the
 * line's subclass (in {@code src/line-4.x} and {@code src/line-3.5}), which adds the members of its
 * Spark's trait (init, the ways to get a store) and turns them into {@link #initStore}, {@link
 * #open} and {@link #upgradeForWrite}.
 *
 * <p>One provider instance is one partition of one operator's state: one {@link VersionedStore}
 * whose durable files live in the store's checkpoint directory ({@code
 * <checkpoint>/state/<operatorId>/<partitionId>[/<storeName>]/}, under {@code changelog/}, {@code
 * snapshot/} and {@code sst/}) and whose working copy is a local RocksDB instance in a directory of
 * its own (see {@link StreamStateConf#LOCAL_DIR}).
 *
 * <p>Spark's life cycle of a provider (the driver's uninitialised instances, {@code init} on an
 * executor, one store per task and batch, maintenance, close) is described on the 4.x {@code
 * StreamStateProvider}; 3.5's is the same with fewer ways to get a store.
 *
 * <p>Over 600 lines because it is Spark's provider lifecycle, whole: opening the engine,
 * maintenance, close, metrics, and the one-open-store permit they share. Everything below a store's
 * open is the engine's ({@code VersionedStore}); a store's row work is {@link
 * StreamStateStoreBase}'s.
 */
abstract class StreamStateProviderBase {
  /**
   * The column family of a store without column families, and Spark 4.x's default one ({@code
   * StateStore.DEFAULT_COL_FAMILY_NAME}); 3.5's rows live in it too, so a checkpoint moves between
   * lines.
   */
  static final String DEFAULT_FAMILY = "default";

  private static final Logger LOG = LoggerFactory.getLogger(StreamStateProviderBase.class);

  static {
    // SET -v lists our keys in a JVM that uses this class (SqlConfEntries).
    SqlConfEntries.register();
  }

  /**
   * Providers initialised and not closed in a process: each one's share of the memory budget. A
   * component of the process's {@link ProcessResources}.
   */
  static final class LiveProviders {
    final AtomicInteger count = new AtomicInteger();
  }

  private final Map<String, ColumnFamilyCodec> codecs = new ConcurrentHashMap<>();

  /** The one permit to have a store open; held from load until commit, abort or release. */
  private final Semaphore permit = new Semaphore(1, true);

  private final AtomicReference<StreamStateStoreBase> openStore = new AtomicReference<>();

  /** Maintenance takes the read lock, close and the engine's close the write lock. */
  private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();

  /**
   * Orders {@link #close} against the permit's release ({@link #releasePermit}): whether the engine
   * is closed by {@code close} or, later, by whoever ends the store that was open.
   */
  private final Object closeLock = new Object();

  /**
   * Closed while a store was open (or being opened): the engine is closed when that store ends,
   * instead of the permit being released. Guarded by {@link #closeLock}.
   */
  private boolean closeWhenStoreEnds;

  /** Whether the engine (the local instance) is closed; guarded by the lifecycle write lock. */
  private boolean engineClosed;

  private volatile StateStoreId storeId;
  private volatile StateStoreConf storeConf;
  private volatile Configuration hadoopConf;
  private volatile boolean useColumnFamilies;
  private volatile StreamStateConf conf;
  private volatile VersionedStore store;
  private volatile RocksDbMemoryBudget budget;

  /** The live-provider count this provider is counted in (null until {@link #initStore}). */
  private volatile LiveProviders liveProviders;

  /**
   * This process's hedging counters of state commits (all zero before the first store opens); for
   * tests.
   */
  static HedgeMetrics.Snapshot hedgeMetricsForTests() {
    return Hedgers.of(ProcessResources.shared()).totals(Hedgers.Kind.STATE_COMMITS);
  }

  private volatile StateStoreProviderId providerId;
  private volatile boolean closed;

  /** See {@link #lastSnapshotReported()}. */
  private final AtomicLong lastSnapshotReported = new AtomicLong(-1);

  /** Engine counters at the previous commit; guarded by {@link #permit}. */
  private StoreMetrics.Snapshot metricsAtLastCommit;

  /** Spark instantiates providers by reflection; the driver never calls {@code init}. */
  StreamStateProviderBase() {
    // Here, not in init: init's signature differs per Spark line, so on another line Spark would
    // call a method this class lacks; the constructor is what every line calls first.
    SparkLine.checkRunningSpark();
  }

  /**
   * Opens the engine for one partition's store: what the line's {@code init} does once it has
   * turned its arguments into the default column family's codec.
   */
  final void initStore(
      StateStoreId stateStoreId,
      ColumnFamilyCodec defaultCodec,
      boolean useColumnFamilies,
      StateStoreConf storeConfs,
      Configuration hadoopConf) {
    this.storeId = stateStoreId;
    this.storeConf = storeConfs;
    this.hadoopConf = hadoopConf;
    this.useColumnFamilies = useColumnFamilies;
    this.conf = StreamStateConf.from(storeConfs);
    // Read here, not in a static field: the class must load on any Spark line, so that its
    // constructor can refuse another line with a clear message (SparkLine).
    String runId = SparkLineApi.runId(hadoopConf);
    this.providerId =
        runId == null ? null : new StateStoreProviderId(stateStoreId, UUID.fromString(runId));
    codecs.put(DEFAULT_FAMILY, defaultCodec);
    ProcessResources resources = ProcessResources.shared(); // Spark made us by class name
    StoreLocations.Location location =
        StoreLocations.of(resources).resolve(stateStoreId, hadoopConf);
    Path localDir = LocalDirs.localDir(conf, stateStoreId);
    long cap = ExecutorMemory.capBytes(conf);
    this.budget =
        RocksDbMemoryBudget.shared(
            resources, cap, conf.heapMirrorBytes(), conf.nativeHeapTrimIntervalMs());
    ConfigWarnings.of(resources)
        .checkProcessWide(
            StreamStateConf.MEMORY_CAP_BYTES, Long.toString(budget.capBytes()), Long.toString(cap));
    if (conf.heapMirrorBytes() >= 0) {
      ConfigWarnings.of(resources)
          .checkProcessWide(
              StreamStateConf.HEAP_MIRROR_BYTES,
              Long.toString(budget.heapMirrors().capBytes()),
              Long.toString(conf.heapMirrorBytes()));
    }
    ConfigWarnings.of(resources)
        .checkProcessWide(
            StreamStateConf.NATIVE_HEAP_TRIM_INTERVAL_MS,
            Long.toString(budget.trimmer().minIntervalMs()),
            Long.toString(conf.nativeHeapTrimIntervalMs()));
    // One hedger per process and policy: its deadline learns from, and its budget bounds, every
    // store that shares it.
    HedgedWriter hedger =
        Hedgers.of(resources).writer(Hedgers.Kind.STATE_COMMITS, conf.hedgePolicy());
    VersionedStoreBuilder builder =
        VersionedStore.builder(describe(stateStoreId), location.storage())
            .prefix(location.prefix())
            .localDir(localDir)
            .localDirSetting(
                StreamStateConf.LOCAL_DIR + " (default: under the executor's spark.local.dir)")
            .options(conf.storeOptions())
            .memoryBudget(budget)
            .hedger(hedger);
    if (conf.groupCommitEnabled()) {
      builder.groupCommitter(
          GroupCommitter.shared(
              resources,
              location.storage(),
              hedger,
              conf.groupCommitMaxWaitMs(),
              conf.groupCommitWaveMs(),
              conf.journal()));
    }
    this.store = builder.open();
    this.metricsAtLastCommit = store.metrics().snapshot();
    this.liveProviders = resources.component(LiveProviders.class, LiveProviders::new);
    liveProviders.count.incrementAndGet();
    LOG.debug(
        "Opened streamstate store {} at {}{} (local {})",
        describe(stateStoreId),
        location.storage().describe(),
        location.prefix(),
        localDir);
  }

  public StateStoreId stateStoreId() {
    return storeId;
  }

  /**
   * The writable store of {@code version} for a task that holds {@code readStore}: that store made
   * writable in place if it is still open at that version, else a fresh load (the read store
   * released). Spark 4.1+ asks for this ({@code upgradeReadStoreToWriteStore}).
   */
  final StreamStateStoreBase upgradeForWrite(
      StreamStateStoreBase readStore,
      long version,
      String checkpointId,
      boolean forceSnapshotOnCommit) {
    if (readStore.provider() != this) {
      // The provider was unloaded and replaced between the read and the write phase of the
      // task: the read store still holds the original provider's permit, so upgrade there.
      return readStore
          .provider()
          .upgradeForWrite(readStore, version, checkpointId, forceSnapshotOnCommit);
    }
    if (readStore.version() == version
        && readStore.isLoadedAt(CheckpointIds.parse(checkpointId, describe(storeId), version))
        && readStore.upgradeToWritable(forceSnapshotOnCommit)) {
      return readStore;
    }
    readStore.release();
    checkInitialized();
    return open(version, checkpointId, false, forceSnapshotOnCommit);
  }

  /**
   * Snapshots if due, then applies retention, and reports the newest snapshot to Spark's
   * coordinator if it has not heard of it. Failures are logged: maintenance is best effort.
   */
  public void doMaintenance() {
    lifecycle.readLock().lock();
    try {
      if (store == null || closed) {
        return;
      }
      store.maintain();
      // Maintenance's own snapshot, and those the engine took by itself since (replay debt,
      // docs/protocol.md), which publish without us: reported here, off the batch's path (a report
      // is a blocking call to the driver), well within the many batches and intervals Spark waits
      // before it calls a store lagging. Only what this instance uploaded, as Spark's providers:
      // not a snapshot it restored.
      long newest = store.lastPublishedSnapshotVersion();
      if (newest > lastSnapshotReported.get()) {
        reportSnapshot(newest);
      }
    } catch (RuntimeException e) {
      // Spark unloads a provider whose maintenance throws (and may deadlock with a task waiting
      // for it, SPARK-46547); a failed snapshot or deletion only delays the next one.
      LOG.warn(
          "Maintenance of streamstate store {} failed: {}", describe(storeId), e.toString(), e);
    } finally {
      lifecycle.readLock().unlock();
    }
  }

  /**
   * Frees the local instance; writes nothing durable. Spark calls it from its maintenance thread
   * once the provider is unloaded, at executor shutdown, and in tests after a failed task. Never
   * waits for an open store:
   *
   * <ul>
   *   <li>no store open: the engine closes once a snapshot uploading in the background has
   *       published, or after {@link StreamStateConf#SNAPSHOT_CLOSE_WAIT_MS} (then the upload stops
   *       before its next create and publishes no manifest, {@link VersionedStore#close()}), so
   *       that a clean stop leaves the next load a snapshot rather than changes to replay;
   *   <li>a store open by the calling thread: it is ended (a writable one aborted, its changes
   *       being uncommitted by definition; a read store released), then the engine closes;
   *   <li>a store open by another thread (a task still running): its next operation fails
   *       ("provider closed"), and the engine closes when that store ends (the task aborts it, or
   *       its completion listener does). Closing the engine under a task's feet could free native
   *       memory that the task is reading.
   * </ul>
   *
   * Loads waiting for the permit fail at once. The durable state stays as of the last commit.
   */
  public void close() {
    lifecycle.writeLock().lock();
    try {
      if (closed || store == null) {
        closed = true;
        return;
      }
      closed = true;
      liveProviders.count.decrementAndGet();
      boolean free;
      StreamStateStoreBase open = null;
      synchronized (closeLock) {
        free = permit.tryAcquire();
        if (!free) {
          closeWhenStoreEnds = true;
          open = openStore.get();
        }
      }
      if (free) {
        awaitSnapshotUploads();
        closeEngine(); // the permit stays taken: nothing opens a closed provider
      } else if (open == null) {
        // A load holds the permit and has not published its store yet: it sees the provider
        // closed, ends what it opened, and that closes the engine.
      } else if (open.isOwnedByCurrentThread()) {
        open.endForClose(); // ends it on this thread; its end closes the engine
      } else {
        open.stopForClose();
        LOG.warn(
            "Closing streamstate store {} while {} is open in another thread: that store fails"
                + " at its next operation, and the local instance is freed when it ends",
            describe(storeId),
            open);
      }
    } finally {
      lifecycle.writeLock().unlock();
    }
  }

  /** Waits, bounded, for the engine's background snapshot upload; see {@link #close()}. */
  private void awaitSnapshotUploads() {
    long waitMs = conf.snapshotCloseWaitMs();
    if (waitMs > 0 && !engineClosed && !store.awaitSnapshotUploads(Duration.ofMillis(waitMs))) {
      LOG.warn(
          "Closing streamstate store {} after waiting {} ms ({}) for its background snapshot"
              + " upload: that snapshot is dropped, and the next load replays the changes since"
              + " the last one",
          describe(storeId),
          waitMs,
          StreamStateConf.SNAPSHOT_CLOSE_WAIT_MS);
    }
  }

  /** Closes the engine once; waits for a maintenance run in progress, never for a store. */
  private void closeEngine() {
    lifecycle.writeLock().lock();
    try {
      if (!engineClosed) {
        engineClosed = true;
        store.close();
      }
    } finally {
      lifecycle.writeLock().unlock();
    }
  }

  /**
   * Gives the permit back after a store ended (or a load failed), or, if the provider was closed
   * meanwhile, closes the engine instead and keeps the permit.
   */
  private void releasePermit() {
    boolean closeNow;
    synchronized (closeLock) {
      closeNow = closeWhenStoreEnds;
      closeWhenStoreEnds = false;
    }
    if (closeNow) {
      closeEngine();
    } else {
      permit.release();
    }
  }

  @Override
  public String toString() {
    return "StreamStateProvider[" + (storeId == null ? "uninitialised" : describe(storeId)) + "]";
  }

  // ---------------------------------------------------------------------------------------------
  // Used by the stores (StreamStateStoreBase)

  StateStoreConf storeConf() {
    return storeConf;
  }

  Configuration hadoopConf() {
    return hadoopConf;
  }

  boolean useColumnFamilies() {
    return useColumnFamilies;
  }

  ColumnFamilyCodec codec(String family) {
    ColumnFamilyCodec codec = codecs.get(family);
    if (codec == null) {
      throw new IllegalArgumentException(
          "Column family '"
              + family
              + "' of state store "
              + describe(storeId)
              + " was not created in this store (known: "
              + codecs.keySet()
              + ")");
    }
    return codec;
  }

  void registerCodec(ColumnFamilyCodec codec) {
    codecs.putIfAbsent(codec.name(), codec);
  }

  void forgetCodec(String family) {
    codecs.remove(family);
  }

  long estimateKeys() {
    return store.estimateKeys();
  }

  /** This provider's share of the process-wide RocksDB memory in use. */
  long memoryShareBytes() {
    return shareOf(budget.usedBytes());
  }

  /** This provider's share of a process-wide figure: the live providers share it equally. */
  private long shareOf(long processBytes) {
    return processBytes / Math.max(1, liveProviders.count.get());
  }

  long lastSnapshotVersion() {
    return store.lastSnapshotVersion();
  }

  /**
   * The changes of versions {@code startVersion} to {@code endVersion} (the engine's change feed),
   * on the lineage of the commit of {@code endVersion} that {@code endCheckpointId} names (format
   * v2), else of its newest.
   */
  CloseableIterator<Changelog> readChanges(
      long startVersion, long endVersion, String endCheckpointId) {
    checkInitialized();
    return store.readChanges(
        startVersion,
        endVersion,
        CheckpointIds.parse(endCheckpointId, describe(storeId), endVersion));
  }

  /** Called by a store when it stops being open (commit, abort, release). */
  void storeFinished(StreamStateStoreBase finished) {
    if (openStore.compareAndSet(finished, null)) {
      releasePermit();
    }
  }

  /**
   * The custom metric values of the commit that produced {@code newVersion}; {@code
   * forcedSnapshot}: Spark asked it to snapshot on commit; {@code rows}: the counts of the new
   * version.
   */
  Map<StateStoreCustomMetric, Object> commitMetrics(
      long newVersion, boolean forcedSnapshot, RowCounts.Totals rows) {
    StoreMetrics.Snapshot now = store.metrics().snapshot();
    long lastSnapshot = store.lastSnapshotVersion();
    Map<StateStoreCustomMetric, Object> values =
        StreamStateMetrics.ofCommit(
            metricsAtLastCommit,
            now,
            newVersion - Math.max(0, lastSnapshot),
            store.uploadLag(),
            forcedSnapshot,
            useColumnFamilies ? rows : new RowCounts.Totals(rows.keys(), 0, 0, 0));
    metricsAtLastCommit = now;
    values.put(StreamStateMetrics.MEMORY_CAP, shareOf(budget.capBytes()));
    values.put(StreamStateMetrics.MEMORY_PINNED, shareOf(budget.pinnedBytes()));
    return values;
  }

  /**
   * A snapshot the coordinator asked for (the store lags), of {@code version}, just committed: the
   * local checkpoint is taken now, the upload runs in the background (joining one already running),
   * and the snapshot is reported to the coordinator once its manifest is durable. Never waits on
   * storage and never fails the commit: the engine logs and counts a failed snapshot.
   */
  void snapshotAfterCommit(long version) {
    try {
      store
          .snapshotInBackground(version)
          .whenComplete(
              (published, failure) -> {
                if (failure == null && published > 0) {
                  reportSnapshot(published);
                }
              });
    } catch (RuntimeException e) {
      LOG.warn(
          "Forced snapshot of streamstate store {} failed (the commit stands): {}",
          describe(storeId),
          e.toString(),
          e);
    }
  }

  /**
   * The newest snapshot version this provider reported to Spark's coordinator (or would have: with
   * no coordinator, as in unit tests, nothing is sent), or -1; for tests.
   */
  long lastSnapshotReported() {
    return lastSnapshotReported.get();
  }

  static String describe(StateStoreId id) {
    return "op=" + id.operatorId() + "/part=" + id.partitionId() + "/" + id.storeName();
  }

  // ---------------------------------------------------------------------------------------------

  final StreamStateStoreBase open(long version, boolean readOnly, boolean forceSnapshotOnCommit) {
    return open(version, null, readOnly, forceSnapshotOnCommit);
  }

  /**
   * The store of {@code version}; with {@code checkpointId} (Spark's checkpoint format v2, the id
   * its commit log records for this partition), of exactly that commit of the version.
   */
  final StreamStateStoreBase open(
      long version, String checkpointId, boolean readOnly, boolean forceSnapshotOnCommit) {
    return open(version, checkpointId, readOnly, forceSnapshotOnCommit, false);
  }

  /**
   * The writable store of {@code version} on an empty state, reading nothing (Spark's {@code
   * loadEmpty}: offline state rewrites such as repartitioning write every row of the store anew);
   * its commit publishes the new version whole, as a snapshot.
   */
  final StreamStateStoreBase openEmpty(long version) {
    return open(version, null, false, false, true);
  }

  private StreamStateStoreBase open(
      long version,
      String checkpointId,
      boolean readOnly,
      boolean forceSnapshotOnCommit,
      boolean empty) {
    if (version < 0) {
      throw LoadErrors.unexpectedVersion(version);
    }
    OptionalLong commitId = CheckpointIds.parse(checkpointId, describe(storeId), version);
    if (!readOnly && !empty) {
      StreamStateStoreBase upgraded = upgradeOwnReadStore(version, commitId, forceSnapshotOnCommit);
      if (upgraded != null) {
        return upgraded;
      }
    }
    return openLoaded(
        version,
        commitId,
        readOnly,
        forceSnapshotOnCommit,
        engine -> empty ? engine.beginEmpty(version) : engine.begin(version, commitId));
  }

  /**
   * Opens the store of {@code version} (of commit {@code commitId} when Spark named one) on the
   * transaction {@code load} opens on the engine (a load, an empty start, or a replay from a chosen
   * snapshot), under the provider's one permit; load failures carry Spark's error classes.
   */
  final StreamStateStoreBase openLoaded(
      long version,
      OptionalLong commitId,
      boolean readOnly,
      boolean forceSnapshotOnCommit,
      Function<VersionedStore, StateTransaction> load) {
    acquirePermit(version);
    StreamStateStoreBase opened = null;
    try {
      StateTransaction tx = load.apply(store);
      if (readOnly) {
        tx.expectCommit(false); // group commits of other tasks need not wait for it
      }
      // The line's store (each line's module compiles its own StreamStateStore with this source).
      opened = new StreamStateStore(this, tx, version, commitId, readOnly, forceSnapshotOnCommit);
      openStore.set(opened);
      if (closed) {
        // Closed while loading: close() left ending this store to us (and the engine's close).
        opened.abort();
        throw closedException();
      }
      opened.attachToTask();
      return opened;
    } catch (RuntimeException e) {
      if (opened == null) {
        releasePermit();
      } else {
        opened.abort();
      }
      if (closed) {
        throw closedException();
      }
      IllegalStateException detail =
          new IllegalStateException(
              "Cannot load version "
                  + version
                  + " of state store "
                  + describe(storeId)
                  + ": "
                  + e.getMessage()
                  + foreignProviderHint(version),
              e);
      MissingFileException missing = causeOfType(e, MissingFileException.class);
      throw missing != null
          ? LoadErrors.missingFile(
              missing.location() != null
                  ? missing.location()
                  : storeId.storeCheckpointLocation().toString(),
              detail)
          : LoadErrors.cannotLoad(detail);
    }
  }

  private static <T extends Throwable> T causeOfType(Throwable e, Class<T> type) {
    for (Throwable t = e; t != null; t = t.getCause()) {
      if (type.isInstance(t)) {
        return type.cast(t);
      }
    }
    return null;
  }

  /** Files another provider writes directly in a store directory: HDFS-backed, RocksDB. */
  private static final Pattern FOREIGN_STATE_FILE =
      Pattern.compile("\\d+\\.(delta|snapshot|zip|changelog)");

  /**
   * After a failed load: if the store directory holds another provider's files (the checkpoint was
   * written by Spark's HDFS-backed or RocksDB provider, and its pinned provider was changed by
   * hand), a sentence saying so and what to do; otherwise empty. Never fails.
   */
  private String foreignProviderHint(long version) {
    if (version == 0 || storeId == null) {
      return "";
    }
    try {
      var dir = storeId.storeCheckpointLocation(); // Hadoop's Path
      FileSystem fs = dir.getFileSystem(hadoopConf);
      List<String> foreign = new ArrayList<>();
      for (FileStatus status : fs.listStatus(dir)) {
        String name = status.getPath().getName();
        if (status.isFile() && FOREIGN_STATE_FILE.matcher(name).matches()) {
          foreign.add(name);
        }
      }
      if (foreign.isEmpty()) {
        return "";
      }
      Collections.sort(foreign);
      return " The store directory "
          + dir
          + " holds files of another state store provider ("
          + String.join(", ", foreign.subList(0, Math.min(5, foreign.size())))
          + (foreign.size() > 5 ? ", ..." : "")
          + "): this checkpoint was written by Spark's HDFSBackedStateStoreProvider or"
          + " RocksDBStateStoreProvider, and streamstate cannot read their files. Spark pins the"
          + " provider in a checkpoint's offset log: run this checkpoint with the provider that"
          + " wrote it, or start the query from a new checkpoint location.";
    } catch (IOException | RuntimeException e) {
      return "";
    }
  }

  /**
   * The task asks for the writable store of the version it holds a read store of: Spark 3.5's and
   * 4.0's restore operator keeps reading through its read store while the save operator of the same
   * task writes ({@code getReadStore} then {@code getStore}), so the read store must stay readable.
   * It becomes the writable store in place, as {@link #upgradeForWrite} does on 4.1+. Null if the
   * task holds no such store.
   */
  private StreamStateStoreBase upgradeOwnReadStore(
      long version, OptionalLong commitId, boolean forceSnapshotOnCommit) {
    StreamStateStoreBase current = openStore.get();
    TaskContext task = TaskContext.get();
    if (current != null
        && task != null
        && current.isOpenReadOnlyOf(task.taskAttemptId())
        && current.version() == version
        && current.isLoadedAt(commitId)
        && current.upgradeToWritable(forceSnapshotOnCommit)) {
      return current;
    }
    return null;
  }

  private void acquirePermit(long version) {
    StreamStateStoreBase current = openStore.get();
    TaskContext task = TaskContext.get();
    if (current != null && task != null && current.isOpenReadOnlyOf(task.taskAttemptId())) {
      // The same task left a read store open and now asks for a store of another version: the
      // read store holds nothing to keep, so release it instead of waiting for ourselves.
      current.release();
    }
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(conf.lockTimeoutMs());
    try {
      // In slices, so that a load waiting here learns at once that the provider was closed.
      for (long left = deadline - System.nanoTime();
          left > 0;
          left = deadline - System.nanoTime()) {
        if (closed) {
          throw closedException();
        }
        if (permit.tryAcquire(Math.min(left, PERMIT_WAIT_SLICE_NANOS), TimeUnit.NANOSECONDS)) {
          if (closed) {
            releasePermit();
            throw closedException();
          }
          return;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(
          "Interrupted while waiting to load version "
              + version
              + " of state store "
              + describe(storeId),
          e);
    }
    throw new IllegalStateException(
        "Cannot load version "
            + version
            + " of state store "
            + describe(storeId)
            + ": another store of it is still open after "
            + conf.lockTimeoutMs()
            + " ms ("
            + openStore.get()
            + "). Raise "
            + StreamStateConf.LOCK_TIMEOUT_MS
            + " if tasks legitimately hold stores that long.");
  }

  /** How long a waiting load sleeps between looks at whether the provider was closed. */
  private static final long PERMIT_WAIT_SLICE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

  private IllegalStateException closedException() {
    return new IllegalStateException("State store provider " + describe(storeId) + " is closed");
  }

  final void checkInitialized() {
    if (store == null) {
      throw new IllegalStateException("StreamStateProvider used before init()");
    }
    if (closed) {
      throw closedException();
    }
  }

  /** Tells the coordinator a snapshot exists, so that it does not flag the store as lagging. */
  private void reportSnapshot(long version) {
    lastSnapshotReported.accumulateAndGet(version, Math::max);
    if (providerId == null) {
      return;
    }
    try {
      SparkLineApi.reportSnapshotUploaded(providerId, version);
    } catch (RuntimeException e) {
      LOG.debug("Could not report snapshot {} of {} to the coordinator", version, providerId, e);
    }
  }
}
