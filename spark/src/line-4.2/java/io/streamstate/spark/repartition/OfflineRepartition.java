package io.streamstate.spark.repartition;

import io.streamstate.spark.StreamStateProvider;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;

/**
 * Spark 4.2's offline state repartitioning for a checkpoint of ours: the steps of Spark's {@code
 * OfflineStateRepartitionRunner} and {@code StateRewriter}, run as Spark runs them, except for the
 * one that refuses us.
 *
 * <p>Spark's runner reads each store's rows with the state data source in its internal "all column
 * families" mode, which {@code StateDataSource.getTable} allows for {@code
 * RocksDBStateStoreProvider} only, by class name (StateDataSource.scala, lines 74-80 in 4.2.0);
 * everything else it does (the repartition batch's offset entry with the new shuffle partition
 * count, the rows read through the provider's generic {@code StateStore} API, repartitioned by
 * their partition key, written into stores opened with {@code loadEmpty}, the operators' metadata,
 * the commit entry with the new stores' checkpoint ids under format v2) asks nothing of the
 * provider that ours does not do. So this class calls Spark's own steps, by reflection where they
 * are private, and builds the state data source's table as {@code getTable} does, minus that check.
 * What it reads and writes, and every check and error besides that one, are Spark's.
 *
 * <p>Bound to Spark 4.2's internals: a Spark whose runner differs fails here with an error naming
 * the step it could not find, before anything is written. The upstream change that would make this
 * class unnecessary (a capability check instead of the class name) is in docs/decisions.md.
 */
public final class OfflineRepartition {
  private OfflineRepartition() {}

  /**
   * Rewrites the state of the query checkpointed at {@code checkpointLocation} into {@code
   * numPartitions} partitions, as a new batch that the query's next run starts after; returns that
   * batch's id. The query must be stopped. With {@code enforceExactlyOnceSink}, as in Spark, a last
   * batch that did not commit is refused rather than skipped.
   *
   * @throws IllegalArgumentException if the checkpoint's last committed batch ran with another
   *     provider than ours (Spark's own runner serves its RocksDB provider)
   */
  public static long run(
      SparkSession spark,
      String checkpointLocation,
      int numPartitions,
      boolean enforceExactlyOnceSink) {
    if (numPartitions <= 0) {
      throw new IllegalArgumentException("numPartitions must be positive, was " + numPartitions);
    }
    SparkSession.setActiveSession(spark);
    OfflineRewrite.Runner runner =
        OfflineRewrite.Runner.open(
            spark, checkpointLocation, numPartitions, enforceExactlyOnceSink);
    long lastCommitted = runner.step("getLastCommittedBatchId");
    requireOurProvider(runner.checkpoint(), lastCommitted, runner.location());
    long lastBatch = runner.step("getLastBatchId");
    long newBatch = runner.step("createNewBatchIfNeeded", lastBatch, lastCommitted);
    OfflineRewrite.rewriteAndCommit(spark, runner, lastCommitted, newBatch, numPartitions);
    return newBatch;
  }

  private static void requireOurProvider(
      StreamingQueryCheckpointMetadata checkpoint, long batch, String location) {
    String pinned = OfflineRewrite.pinnedProvider(checkpoint, batch);
    if (!StreamStateProvider.class.getName().equals(pinned)) {
      throw new IllegalArgumentException(
          "The checkpoint at "
              + location
              + " ran batch "
              + batch
              + " with state store provider "
              + pinned
              + ", not "
              + StreamStateProvider.class.getName()
              + ": repartition it with Spark's own runner"
              + " (spark.streamingCheckpointManager.repartition), which serves Spark's RocksDB"
              + " provider");
    }
  }
}
