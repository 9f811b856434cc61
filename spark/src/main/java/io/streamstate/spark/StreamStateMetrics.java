package io.streamstate.spark;

import io.streamstate.core.engine.StoreMetrics;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomSizeMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomSumMetric;
import org.apache.spark.sql.execution.streaming.state.StateStoreCustomTimingMetric;
import scala.collection.immutable.Seq;

/**
 * The custom metrics the provider reports for each commit, as static descriptors: the driver
 * creates a provider with its no-arg constructor, without {@code init}, only to read them.
 *
 * <p>Spark sums every custom metric over the partitions of an operator, so each value below is the
 * sum over the operator's partitions for one batch; they show up in {@code
 * StreamingQueryProgress.stateOperators[].customMetrics} under these names.
 */
public final class StreamStateMetrics {
  public static final StateStoreCustomTimingMetric COMMIT_LATENCY =
      new StateStoreCustomTimingMetric(
          "streamstateCommitLatencyMs", "streamstate: time to commit (durable changelog write)");
  public static final StateStoreCustomSizeMetric COMMIT_BYTES =
      new StateStoreCustomSizeMetric(
          "streamstateCommitBytes", "streamstate: bytes of the changelogs written by commits");
  public static final StateStoreCustomSumMetric COMMIT_CHANGES =
      new StateStoreCustomSumMetric(
          "streamstateCommitChanges",
          "streamstate: keys put or deleted by commits (with its row-count entries)");
  public static final StateStoreCustomSizeMetric BYTES_WRITTEN =
      new StateStoreCustomSizeMetric(
          "streamstateBytesWritten",
          "streamstate: durable bytes written since the previous commit (changelogs, snapshots)");
  public static final StateStoreCustomSumMetric FILES_WRITTEN =
      new StateStoreCustomSumMetric(
          "streamstateFilesWritten",
          "streamstate: durable files written since the previous commit (changelogs, snapshots)");
  public static final StateStoreCustomSumMetric SNAPSHOT_LAG =
      new StateStoreCustomSumMetric(
          "streamstateSnapshotLagVersions",
          "streamstate: versions committed since the newest snapshot (summed over partitions)");
  public static final StateStoreCustomSumMetric SNAPSHOTS_WRITTEN =
      new StateStoreCustomSumMetric(
          "streamstateSnapshotsWritten",
          "streamstate: snapshots written since the previous commit");
  public static final StateStoreCustomSumMetric WARM_LOADS =
      new StateStoreCustomSumMetric(
          "streamstateWarmLoads",
          "streamstate: partitions loaded from the local instance, reading nothing durable");
  public static final StateStoreCustomSumMetric DURABLE_LOADS =
      new StateStoreCustomSumMetric(
          "streamstateDurableLoads",
          "streamstate: partitions loaded from durable storage (snapshot and/or changelogs)");
  public static final StateStoreCustomSumMetric COLD_LOADS =
      new StateStoreCustomSumMetric(
          "streamstateColdLoads",
          "streamstate: partitions loaded from durable storage by an instance that held none of"
              + " their versions (another executor's partitions, a new executor, a restart)");
  public static final StateStoreCustomSumMetric CHANGELOGS_REPLAYED =
      new StateStoreCustomSumMetric(
          "streamstateChangelogsReplayed", "streamstate: changelogs replayed by loads");

  public static final StateStoreCustomSumMetric HEDGES_FIRED =
      new StateStoreCustomSumMetric(
          "streamstateHedgesFired",
          "streamstate: changelog writes that passed their deadline and were hedged");
  public static final StateStoreCustomSumMetric HEDGES_WON =
      new StateStoreCustomSumMetric(
          "streamstateHedgesWon",
          "streamstate: hedged changelog writes whose hedge completed first");

  public static final StateStoreCustomSumMetric SNAPSHOT_HEDGES_FIRED =
      new StateStoreCustomSumMetric(
          "streamstateSnapshotHedgesFired",
          "streamstate: snapshot file uploads (SSTs, manifests) that passed their deadline and were"
              + " hedged");
  public static final StateStoreCustomSumMetric SNAPSHOT_HEDGES_WON =
      new StateStoreCustomSumMetric(
          "streamstateSnapshotHedgesWon",
          "streamstate: hedged snapshot file uploads whose hedge completed first");
  public static final StateStoreCustomSumMetric SNAPSHOT_FAILURES =
      new StateStoreCustomSumMetric(
          "streamstateSnapshotFailures",
          "streamstate: snapshots that failed (logged at WARN; the state stays durable in"
              + " changelogs)");
  public static final StateStoreCustomSumMetric REPLAY_DEBT_SNAPSHOTS =
      new StateStoreCustomSumMetric(
          "streamstateReplayDebtSnapshots",
          "streamstate: snapshots started in the background because a restart would have replayed"
              + " more changes than snapshot.replayDebtPercent of the store's keys");

  public static final StateStoreCustomSumMetric SEGMENT_COMMITS =
      new StateStoreCustomSumMetric(
          "streamstateSegmentCommits",
          "streamstate: commits published as members of a group commit's segment");
  public static final StateStoreCustomSumMetric SEGMENTS_WRITTEN =
      new StateStoreCustomSumMetric(
          "streamstateSegmentsWritten",
          "streamstate: segment files written by this operator's tasks (each holds the commits of"
              + " all stores of the executor that committed together)");

  public static final StateStoreCustomSumMetric VERSIONS_LOST =
      new StateStoreCustomSumMetric(
          "streamstateVersionsLost",
          "streamstate: versions lost by async durability when a store resumed from its newest"
              + " durable version (always 0 in sync)");
  public static final StateStoreCustomSumMetric UPLOAD_LAG =
      new StateStoreCustomSumMetric(
          "streamstateUploadLagVersions",
          "streamstate: versions committed but not yet durable (async durability; 0 in sync)");

  /**
   * Spark's own name for it, as the HDFS-backed provider reports it ({@code forceSnapshotCount};
   * RocksDB: {@code rocksdbForceSnapshotCount}), SPARK-54063, which Spark's store contract looks
   * for: 1 for a commit whose store Spark asked to snapshot on commit ({@code
   * forceSnapshotOnCommit}), else 0; summed, the stores that did. Ours takes the snapshot's local
   * checkpoint at commit and uploads it in the background.
   */
  public static final StateStoreCustomSumMetric FORCE_SNAPSHOT =
      new StateStoreCustomSumMetric(
          "forceSnapshotCount", "streamstate: number of stores that had forced snapshot on commit");

  /**
   * The three column family metrics of Spark's RocksDB provider, with its names and meanings
   * (Spark's tests and dashboards read them, and a join with state format 3 or 4 reports them):
   * keys of the families Spark declared internal (not in {@code numRowsTotal}), and the number of
   * families of each kind, {@code default} among the external ones. All 0 for a store without
   * column families, as there.
   */
  public static final StateStoreCustomSizeMetric INTERNAL_FAMILY_KEYS =
      new StateStoreCustomSizeMetric(
          "rocksdbNumInternalColFamiliesKeys",
          "streamstate: number of internal keys for internal column families");

  public static final StateStoreCustomSizeMetric EXTERNAL_FAMILIES =
      new StateStoreCustomSizeMetric(
          "rocksdbNumExternalColumnFamilies", "streamstate: number of external column families");
  public static final StateStoreCustomSizeMetric INTERNAL_FAMILIES =
      new StateStoreCustomSizeMetric(
          "rocksdbNumInternalColumnFamilies", "streamstate: number of internal column families");

  /**
   * The process's RocksDB memory budget (one per executor, {@code memoryCapBytes}) as each
   * partition's share: the cap, and the part of the cache that readers pin (blocks of open
   * iterators, which eviction cannot free). Summed over an operator's partitions on one executor,
   * the process's figure; Spark's {@code memoryUsedBytes} is the share of the cache in use (blocks
   * and memtables).
   */
  public static final StateStoreCustomSizeMetric MEMORY_CAP =
      new StateStoreCustomSizeMetric(
          "streamstateMemoryCapBytes",
          "streamstate: the executor's RocksDB memory cap, as this operator's partitions' share");

  public static final StateStoreCustomSizeMetric MEMORY_PINNED =
      new StateStoreCustomSizeMetric(
          "streamstateMemoryPinnedBytes",
          "streamstate: RocksDB cache pinned by readers, as this operator's partitions' share");

  private static final List<StateStoreCustomMetric> ALL =
      List.of(
          COMMIT_LATENCY,
          COMMIT_BYTES,
          COMMIT_CHANGES,
          BYTES_WRITTEN,
          FILES_WRITTEN,
          SNAPSHOT_LAG,
          SNAPSHOTS_WRITTEN,
          WARM_LOADS,
          DURABLE_LOADS,
          COLD_LOADS,
          CHANGELOGS_REPLAYED,
          HEDGES_FIRED,
          HEDGES_WON,
          SNAPSHOT_HEDGES_FIRED,
          SNAPSHOT_HEDGES_WON,
          SNAPSHOT_FAILURES,
          REPLAY_DEBT_SNAPSHOTS,
          SEGMENT_COMMITS,
          SEGMENTS_WRITTEN,
          VERSIONS_LOST,
          UPLOAD_LAG,
          FORCE_SNAPSHOT,
          INTERNAL_FAMILY_KEYS,
          EXTERNAL_FAMILIES,
          INTERNAL_FAMILIES,
          MEMORY_CAP,
          MEMORY_PINNED);

  private StreamStateMetrics() {}

  static Seq<StateStoreCustomMetric> customMetrics() {
    return ScalaInterop.seq(ALL);
  }

  /**
   * The custom metric values of one commit: figures of the commit itself, plus what the store did
   * between the previous commit of this provider and this one ({@code before} to {@code after}).
   */
  static Map<StateStoreCustomMetric, Object> ofCommit(
      StoreMetrics.Snapshot before,
      StoreMetrics.Snapshot after,
      long snapshotLag,
      int uploadLag,
      boolean forcedSnapshot,
      RowCounts.Totals rows) {
    Map<StateStoreCustomMetric, Object> m = new LinkedHashMap<>();
    m.put(COMMIT_LATENCY, after.lastCommitNanos() / 1_000_000L);
    m.put(COMMIT_BYTES, after.lastCommitBytes());
    m.put(COMMIT_CHANGES, after.lastCommitChanges());
    m.put(BYTES_WRITTEN, after.bytesWritten() - before.bytesWritten());
    m.put(FILES_WRITTEN, after.filesWritten() - before.filesWritten());
    m.put(SNAPSHOT_LAG, Math.max(0, snapshotLag));
    m.put(SNAPSHOTS_WRITTEN, after.snapshotsWritten() - before.snapshotsWritten());
    m.put(WARM_LOADS, after.warmLoads() - before.warmLoads());
    m.put(DURABLE_LOADS, after.durableLoads() - before.durableLoads());
    m.put(COLD_LOADS, after.coldLoads() - before.coldLoads());
    m.put(CHANGELOGS_REPLAYED, after.changelogsReplayed() - before.changelogsReplayed());
    m.put(HEDGES_FIRED, after.hedgesFired() - before.hedgesFired());
    m.put(HEDGES_WON, after.hedgesWon() - before.hedgesWon());
    m.put(SNAPSHOT_HEDGES_FIRED, after.snapshotHedgesFired() - before.snapshotHedgesFired());
    m.put(SNAPSHOT_HEDGES_WON, after.snapshotHedgesWon() - before.snapshotHedgesWon());
    m.put(SNAPSHOT_FAILURES, after.snapshotFailures() - before.snapshotFailures());
    m.put(REPLAY_DEBT_SNAPSHOTS, after.replayDebtSnapshots() - before.replayDebtSnapshots());
    m.put(SEGMENT_COMMITS, after.segmentCommits() - before.segmentCommits());
    m.put(SEGMENTS_WRITTEN, after.segmentsWritten() - before.segmentsWritten());
    m.put(VERSIONS_LOST, after.versionsLost() - before.versionsLost());
    m.put(UPLOAD_LAG, (long) uploadLag); // Spark reads sum metrics as Long
    m.put(FORCE_SNAPSHOT, forcedSnapshot ? 1L : 0L);
    m.put(INTERNAL_FAMILY_KEYS, rows.internalKeys());
    m.put(EXTERNAL_FAMILIES, rows.externalFamilies());
    m.put(INTERNAL_FAMILIES, rows.internalFamilies());
    return m;
  }
}
