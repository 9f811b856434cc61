package io.streamstate.dstream.jdbc;

/** What a {@code writeBatch} or {@code writePartition} call did. */
public enum BatchOutcome {
  /** The results and the batch's offsets (or batch id) were committed in one transaction. */
  COMMITTED,
  /**
   * The batch had been committed before (a replay after a restart, or a second driver writing the
   * same batch): nothing was written and the results writer was not called, or its work was rolled
   * back when another writer committed the same batch first.
   */
  SKIPPED_REPLAY
}
