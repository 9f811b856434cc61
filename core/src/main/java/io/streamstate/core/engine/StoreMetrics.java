package io.streamstate.core.engine;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Counters of one store, cumulative since it was opened, plus figures of its last commit. Read with
 * {@link #snapshot()}; the Spark adapter exports them as custom state store metrics.
 */
public final class StoreMetrics {
  final AtomicLong commits = new AtomicLong();
  final AtomicLong commitNanosTotal = new AtomicLong();
  final AtomicLong lastCommitNanos = new AtomicLong();
  final AtomicLong lastCommitBytes = new AtomicLong();
  final AtomicLong lastCommitChanges = new AtomicLong();
  final AtomicLong bytesWritten = new AtomicLong();
  final AtomicLong filesWritten = new AtomicLong();
  final AtomicLong warmLoads = new AtomicLong();
  final AtomicLong durableLoads = new AtomicLong();
  final AtomicLong changelogsReplayed = new AtomicLong();
  final AtomicLong snapshotsWritten = new AtomicLong();
  final AtomicLong sstFilesUploaded = new AtomicLong();
  final AtomicLong sstFilesReused = new AtomicLong();
  final AtomicLong filesDeleted = new AtomicLong();
  final AtomicLong invalidFilesSkipped = new AtomicLong();
  final AtomicLong hedgesFired = new AtomicLong();
  final AtomicLong hedgesWon = new AtomicLong();
  final AtomicLong versionsLost = new AtomicLong();
  final AtomicLong segmentCommits = new AtomicLong();
  final AtomicLong segmentsWritten = new AtomicLong();
  final AtomicLong snapshotHedgesFired = new AtomicLong();
  final AtomicLong snapshotHedgesWon = new AtomicLong();
  final AtomicLong snapshotFailures = new AtomicLong();

  /**
   * An immutable reading of all counters. {@code hedgesFired} and {@code hedgesWon} count changelog
   * and segment writes; {@code snapshotHedgesFired} and {@code snapshotHedgesWon} the SST and
   * manifest uploads of snapshots; {@code snapshotFailures} the snapshots that failed (logged at
   * WARN; the versions they held stay durable in their changelogs).
   */
  public record Snapshot(
      long commits,
      long commitNanosTotal,
      long lastCommitNanos,
      long lastCommitBytes,
      long lastCommitChanges,
      long bytesWritten,
      long filesWritten,
      long warmLoads,
      long durableLoads,
      long changelogsReplayed,
      long snapshotsWritten,
      long sstFilesUploaded,
      long sstFilesReused,
      long filesDeleted,
      long invalidFilesSkipped,
      long hedgesFired,
      long hedgesWon,
      long versionsLost,
      long segmentCommits,
      long segmentsWritten,
      long snapshotHedgesFired,
      long snapshotHedgesWon,
      long snapshotFailures) {}

  public Snapshot snapshot() {
    return new Snapshot(
        commits.get(),
        commitNanosTotal.get(),
        lastCommitNanos.get(),
        lastCommitBytes.get(),
        lastCommitChanges.get(),
        bytesWritten.get(),
        filesWritten.get(),
        warmLoads.get(),
        durableLoads.get(),
        changelogsReplayed.get(),
        snapshotsWritten.get(),
        sstFilesUploaded.get(),
        sstFilesReused.get(),
        filesDeleted.get(),
        invalidFilesSkipped.get(),
        hedgesFired.get(),
        hedgesWon.get(),
        versionsLost.get(),
        segmentCommits.get(),
        segmentsWritten.get(),
        snapshotHedgesFired.get(),
        snapshotHedgesWon.get(),
        snapshotFailures.get());
  }
}
