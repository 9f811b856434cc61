package io.streamstate.dstream.jdbc;

import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.util.List;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.Trigger;

/**
 * The Structured Streaming driver {@link ForeachBatchKillIT} runs in a child JVM and kills: the
 * rate source (50 rows a second, 300 ms trigger), each batch's values inserted into {@code
 * rate_values} through {@link ForeachBatchOutput}, with a checkpoint. Arguments: JDBC URL,
 * checkpoint location, sink name, Spark local directory. Prints {@code COMMITTED <id>} or {@code
 * SKIPPED_REPLAY <id>} per batch.
 */
public final class ForeachBatchDriver {
  static final String CREATE_VALUES_TABLE =
      "CREATE TABLE IF NOT EXISTS rate_values (v BIGINT NOT NULL, batch_id BIGINT NOT NULL)";

  private ForeachBatchDriver() {}

  /** Runs until killed. */
  public static void main(String[] args) throws Exception {
    String url = args[0];
    String checkpoint = args[1];
    String sinkName = args[2];
    String localDir = args[3];
    ForeachBatchOutput sink =
        ExactlyOnceJdbc.forForeachBatch(() -> DriverManager.getConnection(url), sinkName);
    SparkSession spark =
        SparkSession.builder()
            .master("local[2]")
            .appName(sinkName)
            .config("spark.ui.enabled", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.local.dir", localDir)
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate();
    VoidFunction2<Dataset<Row>, Long> write =
        (batch, batchId) -> {
          List<Long> values = batch.select("value").as(Encoders.LONG()).collectAsList();
          BatchOutcome outcome =
              sink.writeBatch(
                  batchId,
                  c -> {
                    try (PreparedStatement insert =
                        c.prepareStatement("INSERT INTO rate_values (v, batch_id) VALUES (?, ?)")) {
                      for (long v : values) {
                        insert.setLong(1, v);
                        insert.setLong(2, batchId);
                        insert.addBatch();
                      }
                      insert.executeBatch();
                    }
                  });
          System.out.println(outcome + " " + batchId);
          System.out.flush();
        };
    System.out.println("STARTED");
    System.out.flush();
    spark
        .readStream()
        .format("rate")
        .option("rowsPerSecond", "50")
        .load()
        .writeStream()
        .option("checkpointLocation", checkpoint)
        .trigger(Trigger.ProcessingTime(300))
        .foreachBatch(write)
        .start()
        .awaitTermination();
  }
}
