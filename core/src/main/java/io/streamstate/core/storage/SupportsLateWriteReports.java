package io.streamstate.core.storage;

/**
 * An optional ability: a storage that can be told that one of its writes is late, and that then
 * sends its later writes elsewhere. On HDFS a write goes through a pipeline of DataNodes chosen
 * when the file is created; a write stuck behind a slow DataNode says which DataNodes to avoid, and
 * new files (a hedge copy, the next journal) are created on others ({@code
 * io.streamstate.hadoop.SlowDataNodes}, docs/protocol.md, "Slow DataNodes").
 *
 * <p>Both methods are hints: cheap, they never throw and never wait for a store (at most a few
 * milliseconds for a local lock), and a name this storage is not writing is ignored. Correctness
 * never depends on them; only where later writes go does.
 */
public interface SupportsLateWriteReports {

  /**
   * Reports that the write of {@code name} in progress (a {@link Storage#create} not yet returned,
   * or an append to the open {@link AppendableFile} of that name) is late: whatever it writes
   * through becomes suspect for a while, and files created from now on avoid it where they can.
   * Called just before a hedge of that write starts, so that the hedge's own create already avoids
   * it.
   */
  void reportLateWrite(String name);

  /**
   * Whether the open {@link AppendableFile} {@code name} writes through something now suspected of
   * being slow (on HDFS: its pipeline holds a suspect DataNode) that a new file would avoid, so
   * that its writer should move its later appends to a new file. False for names this storage is
   * not appending to, where it cannot tell, and where a new file could not be placed elsewhere.
   */
  boolean isSuspectedSlow(String name);
}
