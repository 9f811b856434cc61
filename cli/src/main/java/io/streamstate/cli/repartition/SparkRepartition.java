package io.streamstate.cli.repartition;

import io.streamstate.spark.repartition.OfflineRepartition;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import scala.Option;

/**
 * The Spark side of {@code streamstate repartition}: {@link OfflineRepartition} in an {@link
 * OfflineSession}.
 */
public final class SparkRepartition {
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
    return OfflineSession.run(
        "streamstate repartition",
        location,
        hadoopConf,
        master,
        (spark, format) -> {
          long readBatch = lastCommitted(spark, location);
          long batch = OfflineRepartition.run(spark, location, partitions, enforceExactlyOnceSink);
          return new Result(readBatch, batch, format);
        });
  }

  private static long lastCommitted(SparkSession spark, String location) {
    Option<Object> last =
        new StreamingQueryCheckpointMetadata(spark, location, true).commitLog().getLatestBatchId();
    return last.isDefined() ? (Long) last.get() : -1;
  }
}
