package io.streamstate.core.engine;

import io.streamstate.core.engine.commit.PublishedCommit;
import io.streamstate.core.hedge.HedgedPublish;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Counters of one store, cumulative since it was opened, plus figures of its last commit. Read with
 * {@link #snapshot()}; the Spark adapter exports them as custom state store metrics.
 *
 * <p>The engine counts through the {@code count...} methods only, each told what one step did (what
 * a publish wrote, a load, a snapshot file): how a step's outcome becomes counters is written here
 * once, for the store and for its process's {@link ProcessMetrics} together. They are internal:
 * public for the engine's packages only.
 */
public final class StoreMetrics {
  private final ProcessMetrics process;
  private final AtomicLong commits = new AtomicLong();
  private final AtomicLong commitNanosTotal = new AtomicLong();
  private final AtomicLong lastCommitNanos = new AtomicLong();
  private final AtomicLong lastCommitBytes = new AtomicLong();
  private final AtomicLong lastCommitChanges = new AtomicLong();
  private final AtomicLong bytesWritten = new AtomicLong();
  private final AtomicLong filesWritten = new AtomicLong();
  private final AtomicLong warmLoads = new AtomicLong();
  private final AtomicLong durableLoads = new AtomicLong();
  private final AtomicLong coldLoads = new AtomicLong();
  private final AtomicLong changelogsReplayed = new AtomicLong();
  private final AtomicLong snapshotsWritten = new AtomicLong();
  private final AtomicLong sstFilesUploaded = new AtomicLong();
  private final AtomicLong sstFilesReused = new AtomicLong();
  private final AtomicLong filesDeleted = new AtomicLong();
  private final AtomicLong invalidFilesSkipped = new AtomicLong();
  private final AtomicLong hedgesFired = new AtomicLong();
  private final AtomicLong hedgesWon = new AtomicLong();
  private final AtomicLong versionsLost = new AtomicLong();
  private final AtomicLong segmentCommits = new AtomicLong();
  private final AtomicLong segmentsWritten = new AtomicLong();
  private final AtomicLong snapshotHedgesFired = new AtomicLong();
  private final AtomicLong snapshotHedgesWon = new AtomicLong();
  private final AtomicLong snapshotFailures = new AtomicLong();
  private final AtomicLong replayDebtSnapshots = new AtomicLong();

  /** A store's counters that also count in {@code process}'s. */
  public StoreMetrics(ProcessMetrics process) {
    this.process = process;
  }

  /** A store's counters that count in no process's (tests of one mechanism). */
  public StoreMetrics() {
    this(ProcessMetrics.detached());
  }

  /** Counts what publishing one commit wrote (c2, an async upload, a load's bridge changelog). */
  public void countPublished(PublishedCommit published) {
    filesWritten.addAndGet(published.files());
    bytesWritten.addAndGet(published.bytes());
    if (published.hedgeFired()) {
      hedgesFired.incrementAndGet();
      process.add(ProcessMetrics.Metric.HEDGES_FIRED, 1);
    }
    if (published.hedgeWon()) {
      hedgesWon.incrementAndGet();
      process.add(ProcessMetrics.Metric.HEDGES_WON, 1);
    }
    if (published.segmentMember()) {
      segmentCommits.incrementAndGet();
      process.add(ProcessMetrics.Metric.SEGMENT_COMMITS, 1);
    }
    if (published.segmentWritten()) {
      segmentsWritten.incrementAndGet();
      process.add(ProcessMetrics.Metric.SEGMENTS_WRITTEN, 1);
    }
  }

  /** Counts a committed version: how long its commit took, its bytes and its changes. */
  public void countCommit(long nanos, long bytes, long changes) {
    commits.incrementAndGet();
    commitNanosTotal.addAndGet(nanos);
    lastCommitNanos.set(nanos);
    lastCommitBytes.set(bytes);
    lastCommitChanges.set(changes);
    process.add(ProcessMetrics.Metric.COMMITS, 1);
    process.addNanos(ProcessMetrics.Metric.COMMIT_TIME_MS, nanos);
  }

  /** Counts a warm load: the local instance held the version. */
  public void countWarmLoad() {
    warmLoads.incrementAndGet();
    process.add(ProcessMetrics.Metric.WARM_LOADS, 1);
  }

  /**
   * Counts a load of {@code version} from durable files by an instance that held {@code
   * heldVersion} (-1: none), which took {@code nanos} (failed loads included). It is also cold when
   * the instance held no version and the one loaded is not the empty state (version 0): all it
   * needed came from durable storage, as on an executor that never held the store (a moved
   * partition, a lost executor, a restart) or after a failed load discarded the instance.
   */
  public void countDurableLoad(long heldVersion, long version, long nanos) {
    durableLoads.incrementAndGet();
    if (heldVersion < 0 && version > 0) {
      coldLoads.incrementAndGet();
    }
    process.add(ProcessMetrics.Metric.DURABLE_LOADS, 1);
    process.addNanos(ProcessMetrics.Metric.DURABLE_LOAD_TIME_MS, nanos);
  }

  /** Counts a changelog (or segment member) a load replayed. */
  public void countReplayed() {
    changelogsReplayed.incrementAndGet();
    process.add(ProcessMetrics.Metric.CHANGELOGS_REPLAYED, 1);
  }

  /** Counts a file a load skipped because it does not verify. */
  public void countInvalidSkipped() {
    invalidFilesSkipped.incrementAndGet();
  }

  /** Counts versions an async store lost (committed, never uploaded, bridged over). */
  public void countVersionsLost(long versions) {
    versionsLost.addAndGet(versions);
    process.add(ProcessMetrics.Metric.VERSIONS_LOST, versions);
  }

  /** Counts files deleted (retention, a torn file replaced). */
  public void countDeleted(long files) {
    filesDeleted.addAndGet(files);
  }

  /** Counts a snapshot file's hedge: a second copy of {@code framedBytes} if it fired. */
  public void countSnapshotHedge(HedgedPublish published, long framedBytes) {
    if (published.hedgeFired()) {
      snapshotHedgesFired.incrementAndGet();
      process.add(ProcessMetrics.Metric.SNAPSHOT_HEDGES_FIRED, 1);
      filesWritten.incrementAndGet(); // the second copy, deleted or left once it loses
      bytesWritten.addAndGet(framedBytes);
    }
    if (published.hedgeWon()) {
      snapshotHedgesWon.incrementAndGet();
      process.add(ProcessMetrics.Metric.SNAPSHOT_HEDGES_WON, 1);
    }
  }

  /** Counts a shared SST a snapshot uploaded. */
  public void countSstUploaded(long framedBytes) {
    sstFilesUploaded.incrementAndGet();
    filesWritten.incrementAndGet();
    bytesWritten.addAndGet(framedBytes);
  }

  /** Counts a shared SST a snapshot references without uploading it (confirmed, or there). */
  public void countSstReused() {
    sstFilesReused.incrementAndGet();
  }

  /** Counts a snapshot manifest published. */
  public void countSnapshotWritten(long framedBytes) {
    filesWritten.incrementAndGet();
    bytesWritten.addAndGet(framedBytes);
    snapshotsWritten.incrementAndGet();
    process.add(ProcessMetrics.Metric.SNAPSHOTS_WRITTEN, 1);
  }

  /** Counts a snapshot that failed. */
  public void countSnapshotFailure() {
    snapshotFailures.incrementAndGet();
    process.add(ProcessMetrics.Metric.SNAPSHOT_FAILURES, 1);
  }

  /** Counts a snapshot queued because a load would replay too many changes (replay debt). */
  public void countReplayDebtSnapshot() {
    replayDebtSnapshots.incrementAndGet();
  }

  /**
   * An immutable reading of all counters. {@code coldLoads} are the {@code durableLoads} by an
   * instance that held no version of the store; {@code hedgesFired} and {@code hedgesWon} count
   * changelog and segment writes; {@code snapshotHedgesFired} and {@code snapshotHedgesWon} the SST
   * and manifest uploads of snapshots; {@code snapshotFailures} the snapshots that failed (logged
   * at WARN; the versions they held stay durable in their changelogs); {@code replayDebtSnapshots}
   * the snapshots commits queued for replay debt (each published unless an upload was running, the
   * store closed, or it failed).
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
      long coldLoads,
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
      long snapshotFailures,
      long replayDebtSnapshots) {}

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
        coldLoads.get(),
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
        snapshotFailures.get(),
        replayDebtSnapshots.get());
  }
}
