package io.streamstate.dstream.state;

import java.io.Serializable;

/**
 * What the driver decided for one batch, shipped with its tasks: the version every partition
 * writes, the commit of the previous version each partition loads, the batch's time (the clock of
 * update times and timeouts, as in Spark) and the timeout threshold.
 *
 * @param location where the state lives
 * @param version the version this batch commits; it loads {@code version - 1}
 * @param baseCommitIds the commit of {@code version - 1} to load, per partition (zeros for version
 *     0, the empty state)
 * @param batchTimeMs the batch's time
 * @param timeoutMs the spec's idle timeout, or -1 for none
 */
public record BatchPlan(
    StateLocation location, long version, long[] baseCommitIds, long batchTimeMs, long timeoutMs)
    implements Serializable {

  /** Whether keys time out. */
  public boolean timesOut() {
    return timeoutMs >= 0;
  }

  /** Keys last updated before this time out in this batch (Spark: batch time - timeout). */
  public long timeoutThresholdMs() {
    return batchTimeMs - timeoutMs;
  }
}
