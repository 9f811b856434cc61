package io.streamstate.dstream.state;

import java.io.Serializable;
import java.util.List;

/**
 * What one partition's task produced for one batch: the commit it made and the records the mapping
 * function returned, in the order it returned them. The state RDD of a batch holds one per
 * partition.
 *
 * @param partition the partition
 * @param version the version the partition committed
 * @param commitId the id of that commit
 * @param mapped the mapping function's results
 * @param executor the executor that committed, as {@link PinnedRDD} names it (null outside Spark)
 */
public record BatchRecord<M>(
    int partition, long version, long commitId, List<M> mapped, String executor)
    implements Serializable {}
