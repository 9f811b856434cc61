package io.streamstate.cli.repartition;

import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadataBase;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import scala.Option;

/**
 * The Spark session an offline rewrite of a checkpoint runs in: the one already running in this
 * JVM, else a local one it stops after; with the command's Hadoop settings, and set to the
 * checkpoint format the checkpoint's commit log was written in, as Spark's rewriter requires.
 */
final class OfflineSession {
  private static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";

  private OfflineSession() {}

  /**
   * Runs {@code work} with the session's checkpoint format set to the commit log's ({@code work}
   * gets that format); {@code hadoopConf} are Hadoop settings (a {@code spark.hadoop.} prefix is
   * allowed).
   */
  static <T> T run(
      String app,
      String location,
      Map<String, String> hadoopConf,
      String master,
      java.util.function.BiFunction<SparkSession, Integer, T> work) {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) {
      active = SparkSession.getDefaultSession();
    }
    boolean own = active.isEmpty();
    SparkSession spark;
    if (own) {
      SparkSession.Builder builder =
          SparkSession.builder().master(master).appName(app).config("spark.ui.enabled", "false");
      hadoopConf.forEach(
          (k, v) -> builder.config(k.startsWith("spark.hadoop.") ? k : "spark.hadoop." + k, v));
      spark = builder.getOrCreate();
      spark.sparkContext().setLogLevel("ERROR");
    } else {
      spark = active.get();
      hadoopConf.forEach(
          (k, v) ->
              spark
                  .sparkContext()
                  .hadoopConfiguration()
                  .set(k.startsWith("spark.hadoop.") ? k.substring(13) : k, v));
    }
    String previousFormat = spark.conf().get(FORMAT, null);
    try {
      int format = commitLogFormat(spark, location);
      spark.conf().set(FORMAT, String.valueOf(format));
      return work.apply(spark, format);
    } finally {
      if (own) {
        spark.stop();
      } else if (previousFormat == null) {
        spark.conf().unset(FORMAT);
      } else {
        spark.conf().set(FORMAT, previousFormat);
      }
    }
  }

  /** The version of the last committed batch's commit entry (1 if none). */
  private static int commitLogFormat(SparkSession spark, String location) {
    StreamingQueryCheckpointMetadata checkpoint =
        new StreamingQueryCheckpointMetadata(spark, location, true);
    Option<Object> lastCommitted = checkpoint.commitLog().getLatestBatchId();
    if (lastCommitted.isDefined()) {
      Option<CommitMetadataBase> commit = checkpoint.commitLog().get((Long) lastCommitted.get());
      if (commit.isDefined()) {
        return commit.get().version();
      }
    }
    return 1;
  }
}
