package io.streamstate.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.sum;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.Trigger;

/**
 * One run of a small aggregation query ({@code sum(value)} per key over JSON files, one file per
 * batch, {@code AvailableNow}) on our provider and checkpoint file manager, for {@link
 * CheckpointMoveIT}: run in a child JVM on one Spark line, then on another with the same
 * checkpoint. Appends {@code batch key total} lines to the output file. Uses only Spark's public
 * API, the same on every line, and no other test class (it is copied alone into the child's
 * classpath).
 *
 * <p>Arguments: checkpoint URI, input directory, output file.
 */
public final class CheckpointMoveMain {
  private CheckpointMoveMain() {}

  public static void main(String[] args) throws Exception {
    String checkpoint = args[0];
    String input = args[1];
    String output = args[2];
    SparkSession spark =
        SparkSession.builder()
            .master("local[2]")
            .appName("CheckpointMoveMain")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "3")
            .config(
                "spark.sql.streaming.stateStore.providerClass",
                "io.streamstate.spark.StreamStateProvider")
            .config(
                "spark.sql.streaming.checkpointFileManagerClass",
                "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager")
            .getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    try {
      Dataset<Row> totals =
          spark
              .readStream()
              .schema("key STRING, value LONG")
              .option("maxFilesPerTrigger", "1")
              .json(input)
              .groupBy(col("key"))
              .agg(sum(col("value")).as("total"));
      StreamingQuery query =
          totals
              .writeStream()
              .outputMode("update")
              .option("checkpointLocation", checkpoint)
              .trigger(Trigger.AvailableNow())
              .foreachBatch(
                  (VoidFunction2<Dataset<Row>, Long>)
                      (batch, id) -> {
                        List<String> lines = new ArrayList<>();
                        for (Row r : batch.collectAsList()) {
                          lines.add(id + " " + r.getString(0) + " " + r.getLong(1));
                        }
                        Files.write(
                            Paths.get(output),
                            lines,
                            StandardCharsets.UTF_8,
                            StandardOpenOption.CREATE,
                            StandardOpenOption.APPEND);
                      })
              .start();
      query.awaitTermination();
      System.out.println("CHECKPOINT-MOVE ran on Spark " + spark.version());
    } finally {
      spark.stop();
    }
  }
}
