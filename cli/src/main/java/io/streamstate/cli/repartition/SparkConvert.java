package io.streamstate.cli.repartition;

import io.streamstate.spark.repartition.OfflineConvert;
import java.util.Map;

/**
 * The Spark side of {@code streamstate convert}: {@link OfflineConvert} in an {@link
 * OfflineSession}.
 */
public final class SparkConvert {
  private SparkConvert() {}

  /** What the conversion did. */
  public record Result(
      long readBatch, long batch, String from, String to, int partitions, int checkpointFormat) {}

  /**
   * The provider class of a short name ({@code streamstate}, {@code rocksdb}); refuses one this
   * cannot convert to.
   */
  public static String providerClass(String shortName) {
    String provider = OfflineConvert.PROVIDERS.get(shortName);
    if (provider == null) {
      throw new IllegalArgumentException(
          "--to must be one of streamstate, rocksdb, hdfs; was " + shortName);
    }
    OfflineConvert.requireTarget(provider);
    return provider;
  }

  /**
   * Converts the checkpoint at {@code location} to the provider {@code to} (a short name); {@code
   * hadoopConf} are Hadoop settings (a {@code spark.hadoop.} prefix is allowed).
   */
  public static Result run(
      String location,
      Map<String, String> hadoopConf,
      String to,
      boolean enforceExactlyOnceSink,
      String master) {
    String target = providerClass(to);
    return OfflineSession.run(
        "streamstate convert",
        location,
        hadoopConf,
        master,
        (spark, format) -> {
          OfflineConvert.Result r =
              OfflineConvert.run(spark, location, target, enforceExactlyOnceSink);
          return new Result(r.readBatch(), r.batch(), r.from(), r.to(), r.partitions(), format);
        });
  }
}
