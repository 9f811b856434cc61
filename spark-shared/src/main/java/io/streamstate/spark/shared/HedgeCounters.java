package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.hedge.HedgeMetrics;

/**
 * This process's hedging counters ({@link Hedgers} of {@link ProcessResources#shared()}), summed
 * over its hedged writers of each kind: the state stores' commits, Spark's log entries (offsets,
 * commits, sink and source logs, through {@code RenameFreeCheckpointFileManager}), and the file
 * sink's outputs ({@code HedgedFileCommitProtocol}). Cumulative since the process (or a test's
 * restart of it) started; {@link HedgeMetrics.Snapshot#since} gives a delta. For tools and
 * benchmarks (Spark's own metrics carry the stores' per operator).
 */
public final class HedgeCounters {
  private HedgeCounters() {}

  /** The state stores' commit writes (changelogs, segments, journal appends). */
  public static HedgeMetrics.Snapshot stateCommits() {
    return Hedgers.of(ProcessResources.shared()).totals(Hedgers.Kind.STATE_COMMITS);
  }

  /** Spark's log entries written through our checkpoint file manager. */
  public static HedgeMetrics.Snapshot sparkLogs() {
    return Hedgers.of(ProcessResources.shared()).totals(Hedgers.Kind.SPARK_LOGS);
  }

  /**
   * The changelogs and snapshot zips of Spark's RocksDB provider written through our checkpoint
   * file manager ({@code io.streamstate.spark.shared.checkpoint.RocksDbUploads}).
   */
  public static HedgeMetrics.Snapshot sparkStateFiles() {
    return Hedgers.of(ProcessResources.shared()).totals(Hedgers.Kind.SPARK_STATE_FILES);
  }

  /** The file sink's output files written through our commit protocol. */
  public static HedgeMetrics.Snapshot sinkOutputs() {
    return Hedgers.of(ProcessResources.shared()).totals(Hedgers.Kind.SINK_OUTPUTS);
  }
}
