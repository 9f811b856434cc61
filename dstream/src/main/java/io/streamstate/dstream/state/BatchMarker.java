package io.streamstate.dstream.state;

import java.io.Serializable;
import java.util.Arrays;

/**
 * A completed batch of an incremental {@code mapWithState}: every partition committed {@code
 * version} (the batch's ordinal: the first batch ever is version 1) and every output operation of
 * the batch finished. {@code commitIds[p]} is the commit of partition {@code p} that the next batch
 * loads, exactly: other commits of the same version (a task retry, a re-run after a driver restart)
 * are never read.
 *
 * @param version the version every partition's store committed for this batch
 * @param batchTimeMs the batch's time (Spark's {@code Time}, milliseconds) in the run that wrote it
 * @param commitIds the commit id of each partition, indexed by partition
 */
public record BatchMarker(long version, long batchTimeMs, long[] commitIds)
    implements Serializable {

  public BatchMarker {
    if (version < 1) {
      throw new IllegalArgumentException("version must be >= 1: " + version);
    }
    commitIds = commitIds.clone();
  }

  /** The number of partitions of the state. */
  public int numPartitions() {
    return commitIds.length;
  }

  /** The commit id of partition {@code partition}. */
  public long commitId(int partition) {
    return commitIds[partition];
  }

  @Override
  public long[] commitIds() {
    return commitIds.clone();
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof BatchMarker m
        && m.version == version
        && m.batchTimeMs == batchTimeMs
        && Arrays.equals(m.commitIds, commitIds);
  }

  @Override
  public int hashCode() {
    return Long.hashCode(version) * 31 + Arrays.hashCode(commitIds);
  }

  @Override
  public String toString() {
    return "BatchMarker[version="
        + version
        + ", batchTimeMs="
        + batchTimeMs
        + ", partitions="
        + commitIds.length
        + "]";
  }
}
