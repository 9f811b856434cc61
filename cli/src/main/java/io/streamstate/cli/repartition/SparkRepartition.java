package io.streamstate.cli.repartition;

import io.streamstate.spark.repartition.OfflineRepartition;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadataBase;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import scala.Option;

/**
 * The Spark side of {@code streamstate repartition}: a Spark session (the one already running in
 * this JVM, else a local one it stops after), set as the query ran (the checkpoint format of its
 * commit log, which Spark's rewriter requires), and {@link OfflineRepartition}.
 */
public final class SparkRepartition {
  private static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";

  private SparkRepartition() {}

  /** What the repartition did. */
  public record Result(long readBatch, long batch, int checkpointFormat) {}

  /**
   * Repartitions the checkpoint at {@code location} into {@code partitions}; {@code hadoopConf} are
   * Hadoop settings (a {@code spark.hadoop.} prefix is allowed).
   */
  public static Result run(
      String location,
      Map<String, String> hadoopConf,
      int partitions,
      boolean enforceExactlyOnceSink,
      String master) {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) {
      active = SparkSession.getDefaultSession();
    }
    boolean own = active.isEmpty();
    SparkSession spark;
    if (own) {
      SparkSession.Builder builder =
          SparkSession.builder()
              .master(master)
              .appName("streamstate repartition")
              .config("spark.ui.enabled", "false");
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
      StreamingQueryCheckpointMetadata checkpoint =
          new StreamingQueryCheckpointMetadata(spark, location, true);
      Option<Object> lastCommitted = checkpoint.commitLog().getLatestBatchId();
      int format = 1;
      long readBatch = -1;
      if (lastCommitted.isDefined()) {
        readBatch = (Long) lastCommitted.get();
        Option<CommitMetadataBase> commit = checkpoint.commitLog().get(readBatch);
        if (commit.isDefined()) {
          format = commit.get().version();
        }
      }
      spark.conf().set(FORMAT, String.valueOf(format));
      long batch = OfflineRepartition.run(spark, location, partitions, enforceExactlyOnceSink);
      return new Result(readBatch, batch, format);
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
}
