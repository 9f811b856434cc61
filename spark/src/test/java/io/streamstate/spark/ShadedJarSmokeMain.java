package io.streamstate.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;

import java.util.List;
import java.util.stream.Collectors;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * Run by {@link ShadedJarIT} in a separate JVM whose classpath is Spark's plus the shaded runtime
 * jar (not the module's classes): a stateful query with the provider named by its class name,
 * stopped and restarted. Prints {@code SHADED-OK} and the result, exits non-zero on failure.
 */
public final class ShadedJarSmokeMain {
  private ShadedJarSmokeMain() {}

  public static void main(String[] args) throws Exception {
    String checkpoint = args[0];
    SparkSession spark =
        SparkSession.builder()
            .master("local[1]")
            .appName("ShadedJarSmoke")
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.sql.shuffle.partitions", "2")
            .config(
                "spark.sql.streaming.stateStore.providerClass",
                "io.streamstate.spark.StreamStateProvider")
            .getOrCreate();
    spark.sparkContext().setLogLevel("ERROR");
    try {
      MemoryStream<String> input = MemoryStream.apply(Encoders.STRING(), spark);
      String first = run(spark, input, checkpoint, List.of("a", "b", "a"));
      String second = run(spark, input, checkpoint, List.of("a", "c"));
      String provider =
          Class.forName("io.streamstate.spark.StreamStateProvider")
              .getProtectionDomain()
              .getCodeSource()
              .getLocation()
              .toString();
      System.out.println(
          "SHADED-OK first=" + first + " second=" + second + " provider=" + provider);
    } finally {
      spark.stop();
    }
  }

  private static String run(
      SparkSession spark, MemoryStream<String> input, String checkpoint, List<String> data)
      throws Exception {
    StreamingQuery query =
        input
            .toDF()
            .groupBy(col("value"))
            .agg(count(lit(1)).as("n"))
            .writeStream()
            .format("memory")
            .queryName("counts")
            .outputMode(OutputMode.Complete())
            .option("checkpointLocation", checkpoint)
            .start();
    try {
      input.addData(ScalaInterop.seq(data));
      query.processAllAvailable();
    } finally {
      query.stop();
    }
    if (query.exception().isDefined()) {
      throw query.exception().get();
    }
    return spark.table("counts").orderBy("value").collectAsList().stream()
        .map(Row::toString)
        .collect(Collectors.joining());
  }
}
