package io.streamstate.cli;

import static org.apache.spark.sql.functions.col;

import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.StreamStateProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.streaming.StreamingQuery;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The real Spark queries whose checkpoints the command's tests read: one session per test class
 * (local[2], 2 shuffle partitions, quiet), and a query of two stateful operators, a dedup ({@code
 * dropDuplicates}, operator 0) feeding a count per key (operator 1), over a memory stream, with the
 * providers and checkpoint file managers a test asks for.
 */
final class SparkQueries {
  static final String OURS = StreamStateProvider.class.getName();
  static final String HDFS_BACKED =
      "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider";
  static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";
  static final String CFM_CLASS = "spark.sql.streaming.checkpointFileManagerClass";
  static final String OUR_CFM = "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

  /**
   * Spark's own manager on Hadoop's FileSystem API (its default, FileContext, on local disk forks).
   */
  static final String SPARK_FS_CFM =
      "org.apache.spark.sql.execution.streaming.checkpointing."
          + "FileSystemBasedCheckpointFileManager";

  static final int SHUFFLE_PARTITIONS = 2;

  private SparkQueries() {}

  /** A fresh work directory for one test class, under {@code target/it-work}. */
  static Path newWorkDir(Class<?> testClass) {
    try {
      Path base = Path.of("target", "it-work");
      Files.createDirectories(base);
      return Files.createTempDirectory(base, testClass.getSimpleName() + "-").toAbsolutePath();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static SparkSession start(String app, Path work, Map<String, String> extra) {
    SparkSession.Builder builder =
        SparkSession.builder()
            .master("local[2]")
            .appName(app)
            .config("spark.ui.enabled", "false")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.local.dir", work.resolve("spark-local").toString())
            .config("spark.sql.shuffle.partitions", String.valueOf(SHUFFLE_PARTITIONS))
            .config("spark.sql.warehouse.dir", work.resolve("warehouse").toString())
            .config(CFM_CLASS, SPARK_FS_CFM)
            // Frequent maintenance and snapshots, so that checkpoints hold snapshots too.
            .config("spark.sql.streaming.stateStore.maintenanceInterval", "200ms")
            .config("spark.sql.streaming.stateStore.minDeltasForSnapshot", "2")
            .config("spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true")
            .config(StreamStateConf.LOCAL_DIR, work.resolve("streamstate-local").toString())
            .config(StreamStateConf.MEMORY_CAP_BYTES, String.valueOf(64L << 20));
    extra.forEach(builder::config);
    SparkSession spark = builder.getOrCreate();
    spark.sparkContext().setLogLevel("WARN");
    return spark;
  }

  /**
   * A query of two stateful operators: distinct values (operator 0), counted per {@code value % 3}
   * (operator 1), in complete mode into a memory table; its input a memory stream that lives as
   * long as this object, so that a stopped query resumes from its checkpoint.
   */
  static final class DedupCount {
    private final SparkSession spark;
    private String checkpoint;
    private final String table;
    private final MemoryStream<Integer> input;
    private final Dataset<Row> counts;
    private final List<Integer> sent = new ArrayList<>();
    private StreamingQuery running;

    DedupCount(SparkSession spark, String checkpoint, String table) {
      this.spark = spark;
      this.checkpoint = checkpoint;
      this.table = table;
      this.input = MemoryStream.apply(Encoders.INT(), spark);
      this.counts =
          input.toDF().dropDuplicates("value").groupBy(col("value").mod(3).as("k")).count();
    }

    /** Starts (or resumes) the query with these session confs, which stay set while it runs. */
    DedupCount start(Map<String, String> confs) throws Exception {
      confs.forEach((k, v) -> spark.conf().set(k, v));
      running =
          counts
              .writeStream()
              .format("memory")
              .queryName(table)
              .outputMode("complete")
              .option("checkpointLocation", checkpoint)
              .start();
      return this;
    }

    /** From now on the query runs on {@code location} (a copy of its checkpoint), same input. */
    DedupCount movedTo(String location) {
      this.checkpoint = location;
      return this;
    }

    /** One batch of these values. */
    DedupCount batch(Integer... values) {
      sent.addAll(List.of(values));
      input.addData(CollectionConverters.asScala(List.of(values)).toSeq());
      running.processAllAvailable();
      return this;
    }

    /** Stops the query and unsets the confs it was started with. */
    void stop(Map<String, String> confs) throws Exception {
      running.stop();
      confs.keySet().forEach(k -> spark.conf().unset(k));
      if (running.exception().isDefined()) {
        throw running.exception().get();
      }
    }

    /** The memory table's rows, "k=count", sorted. */
    List<String> rows() {
      List<String> rows = new ArrayList<>();
      for (Row r : spark.table(table).collectAsList()) {
        rows.add(r.get(0) + "=" + r.get(1));
      }
      rows.sort(null);
      return rows;
    }

    /** What the table must hold after every batch sent: distinct values counted per value % 3. */
    List<String> expectedRows() {
      Map<Integer, Integer> byKey = new TreeMap<>();
      for (int v : new TreeSet<>(sent)) {
        byKey.merge(v % 3, 1, Integer::sum);
      }
      List<String> rows = new ArrayList<>();
      byKey.forEach((k, n) -> rows.add(k + "=" + n));
      rows.sort(null);
      return rows;
    }
  }
}
