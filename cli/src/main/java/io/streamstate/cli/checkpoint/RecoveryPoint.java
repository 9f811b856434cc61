package io.streamstate.cli.checkpoint;

import java.util.OptionalLong;

/**
 * Where a restarted query resumes, from the commit log: the newest committed batch {@code L}, so
 * the next batch is {@code L + 1}, which loads every store at version {@code L + 1} (a batch {@code
 * N} loads version {@code N} and commits {@code N + 1}); with no committed batch, version 0 (the
 * empty state). Under checkpoint format v2 the entry of batch {@code L} also names, per store, the
 * commit of that version to load.
 */
public final class RecoveryPoint {
  private final Long lastCommittedBatch;
  private final LogEntries.Commit lastCommit;

  private RecoveryPoint(Long lastCommittedBatch, LogEntries.Commit lastCommit) {
    this.lastCommittedBatch = lastCommittedBatch;
    this.lastCommit = lastCommit;
  }

  /** From the checkpoint's commit log (its newest whole entry). */
  public static RecoveryPoint of(SparkLog commits) {
    Long last = null;
    LogEntries.Commit parsed = null;
    for (SparkLog.Entry e : commits.entries().descendingMap().values()) {
      if (e.whole()) {
        last = e.batchId();
        try {
          parsed = LogEntries.parseCommit(e.text());
        } catch (RuntimeException unparseable) {
          parsed = null;
        }
        break;
      }
    }
    return new RecoveryPoint(last, parsed);
  }

  /** The newest committed batch, or null if none. */
  public Long lastCommittedBatch() {
    return lastCommittedBatch;
  }

  /** The version every store is loaded at when the query restarts. */
  public long version() {
    return lastCommittedBatch == null ? 0 : lastCommittedBatch + 1;
  }

  /**
   * The state checkpoint format the newest commit entry was written under: 2 when it is a {@code
   * v2} entry with state ids (format v2 records the commit of every store), 1 for a {@code v1}
   * entry, null without a readable entry. Spark 4.2 does not pin the format among the offset log's
   * confs.
   */
  public String formatVersion() {
    if (lastCommit == null) {
      return null;
    }
    return lastCommit.version().equals("v2") && !lastCommit.stateUniqueIds().isEmpty() ? "2" : "1";
  }

  /** The commit of that version the commit log names for a store (format v2), if it names one. */
  public OptionalLong commitOf(StateDirectory.StoreKey key) {
    if (lastCommit == null || key.storeName() != null) {
      return OptionalLong.empty();
    }
    return lastCommit.commitIdOf(key.operator(), key.partition());
  }
}
