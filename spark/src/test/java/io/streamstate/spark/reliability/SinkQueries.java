package io.streamstate.spark.reliability;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;

import io.streamstate.spark.HedgedFileCommitProtocol;
import io.streamstate.spark.SlowPrimaryFileSystem;
import io.streamstate.spark.StreamStateConf;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;

/**
 * The file-sink queries of the hedged-output tests, their input and how their output is read.
 *
 * <p>Input: one JSON file of events {@code (id, key, ts, value)} per batch, read with {@code
 * maxFilesPerTrigger=1}, so the offset log fixes what each batch holds across stops, kills and
 * restarts. About a quarter of the events repeat an earlier one exactly (an at-least-once
 * producer); the last file also moves the watermark past every window.
 */
final class SinkQueries {
  static final String COMMIT_PROTOCOL_CLASS = "spark.sql.streaming.commitProtocolClass";
  static final String SPARK_PROTOCOL =
      "org.apache.spark.sql.execution.streaming.ManifestFileCommitProtocol";

  static final StructType EVENTS =
      new StructType()
          .add("id", DataTypes.LongType)
          .add("key", DataTypes.StringType)
          .add("ts", DataTypes.TimestampType)
          .add("value", DataTypes.LongType);

  private SinkQueries() {}

  /** The two stateful queries and the format each writes. */
  enum Query {
    /** Count and sum per key and 10-second window, watermark 10 s, append mode, into Parquet. */
    AGGREGATE_INTO_PARQUET("parquet"),
    /** dropDuplicates on (id, ts) with a 10-second watermark, append mode, into JSON. */
    DEDUPLICATE_INTO_JSON("json");

    final String format;

    Query(String format) {
      this.format = format;
    }

    StructType outputSchema() {
      return this == AGGREGATE_INTO_PARQUET
          ? new StructType()
              .add("start", DataTypes.LongType)
              .add("key", DataTypes.StringType)
              .add("n", DataTypes.LongType)
              .add("total", DataTypes.LongType)
          : EVENTS;
    }
  }

  /**
   * Session settings of the hedged runs: the reliability tests' (our checkpoint file manager), the
   * slow-primary file system, every sink write hedged (deadline 0 until latencies are known, no
   * budget limit) and one manifest file per batch (no compaction), so that each batch's list can be
   * checked on its own.
   */
  static Map<String, String> sessionConf(Path work) {
    Map<String, String> conf = new LinkedHashMap<>(ReliabilityQuery.sessionConf(work));
    conf.put(
        "spark.hadoop.fs." + SlowPrimaryFileSystem.SCHEME + ".impl",
        SlowPrimaryFileSystem.class.getName());
    conf.put(StreamStateConf.HEDGE_FLOOR_MS, "0");
    conf.put(StreamStateConf.HEDGE_INITIAL_DEADLINE_MS, "0");
    conf.put(StreamStateConf.HEDGE_BUDGET_FRACTION, "1");
    conf.put("spark.sql.streaming.fileSink.log.compactInterval", "1000");
    return conf;
  }

  /** Runs with our provider and the hedged protocol {@code protocolClass}. */
  static void useHedged(SparkSession spark, String protocolClass) {
    spark.conf().set(ReliabilityQuery.PROVIDER_CLASS, ReliabilityQuery.OURS);
    spark.conf().set(COMMIT_PROTOCOL_CLASS, protocolClass);
  }

  static void useHedged(SparkSession spark) {
    useHedged(spark, HedgedFileCommitProtocol.class.getName());
  }

  /** Runs as Spark alone: its HDFS-backed provider and its file-sink commit protocol. */
  static void useSparkDefaults(SparkSession spark) {
    spark.conf().set(ReliabilityQuery.PROVIDER_CLASS, ReliabilityQuery.HDFS);
    spark.conf().set(COMMIT_PROTOCOL_CLASS, SPARK_PROTOCOL);
  }

  // ---- input ----

  /** Writes the input of {@code batches} batches into {@code dir}, one file per batch. */
  static void writeInput(Path dir, long seed, int batches) {
    Random r = new Random(seed);
    List<String> earlier = new ArrayList<>();
    try {
      Files.createDirectories(dir);
      long id = 0;
      for (int b = 0; b < batches; b++) {
        List<String> lines = new ArrayList<>();
        long base = 100 + b * 8L;
        for (int i = 0; i < 24; i++) {
          if (!earlier.isEmpty() && r.nextInt(4) == 0) {
            lines.add(earlier.get(earlier.size() - 1 - r.nextInt(Math.min(earlier.size(), 10))));
          } else {
            String e = event(id++, "k" + r.nextInt(5), base + r.nextInt(16), r.nextInt(1000));
            earlier.add(e);
            lines.add(e);
          }
        }
        if (b == batches - 1) {
          lines.add(event(1_000_000, "flush", 100_000, 0)); // closes every window
        }
        Path file = dir.resolve(String.format("events-%05d.json", b));
        Files.write(file, lines, StandardCharsets.UTF_8);
        // The file source takes the oldest file first: make the order explicit.
        Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_000L + b * 1000L));
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String event(long id, String key, long seconds, long value) {
    return String.format(
        "{\"id\":%d,\"key\":\"%s\",\"ts\":\"%s\",\"value\":%d}",
        id, key, java.time.Instant.ofEpochSecond(seconds), value);
  }

  /**
   * Makes the input files {@code from} (inclusive) to {@code to} (exclusive) visible in {@code
   * dir}.
   */
  static void stage(Path all, Path dir, int from, int to) {
    try {
      Files.createDirectories(dir);
      for (int b = from; b < to; b++) {
        String name = String.format("events-%05d.json", b);
        Files.copy(
            all.resolve(name),
            dir.resolve(name),
            StandardCopyOption.COPY_ATTRIBUTES,
            StandardCopyOption.REPLACE_EXISTING);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  // ---- queries ----

  static Dataset<Row> build(SparkSession spark, Query query, Path input) {
    Dataset<Row> events =
        spark
            .readStream()
            .schema(EVENTS)
            .option("maxFilesPerTrigger", 1)
            .json(input.toString())
            .withWatermark("ts", "10 seconds");
    if (query == Query.AGGREGATE_INTO_PARQUET) {
      return events
          .groupBy(window(col("ts"), "10 seconds"), col("key"))
          .agg(count(lit(1)).as("n"), sum("value").as("total"))
          .select(col("window.start").cast("long").as("start"), col("key"), col("n"), col("total"));
    }
    return events.dropDuplicates("id", "ts");
  }

  /** Starts the query, runs it until its visible input is processed, and stops it. */
  static void runOnce(SparkSession spark, Query query, Path input, String checkpoint, String output)
      throws Exception {
    StreamingQuery running =
        build(spark, query, input)
            .writeStream()
            .format(query.format)
            .outputMode(OutputMode.Append())
            .option("checkpointLocation", checkpoint)
            .option("path", output)
            .start();
    try {
      running.processAllAvailable();
    } finally {
      running.stop();
    }
  }

  // ---- output ----

  /** The rows Spark's file source reads from a sink directory (it honours _spark_metadata). */
  static List<String> read(SparkSession spark, Query query, String output) {
    return rows(spark.read().schema(query.outputSchema()).format(query.format).load(output));
  }

  static List<String> rows(Dataset<Row> ds) {
    List<String> rows = new ArrayList<>();
    for (Row row : ds.collectAsList()) {
      rows.add(row.toString());
    }
    rows.sort(null);
    return rows;
  }

  /** Every {@code part-} file under a local sink directory (not its metadata), by local path. */
  static List<Path> partFilesOnDisk(Path dir) {
    try (Stream<Path> walk = Files.walk(dir)) {
      return walk.filter(Files::isRegularFile)
          .filter(p -> !dir.relativize(p).toString().startsWith("_spark_metadata"))
          .filter(p -> p.getFileName().toString().startsWith("part-"))
          .sorted()
          .toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Multiset difference, for messages: rows of {@code expected} missing and rows extra. */
  static String difference(List<String> expected, List<String> actual) {
    Map<String, Integer> counts = new HashMap<>();
    expected.forEach(r -> counts.merge(r, 1, Integer::sum));
    actual.forEach(r -> counts.merge(r, -1, Integer::sum));
    StringBuilder b = new StringBuilder();
    counts.forEach(
        (row, n) -> {
          if (n != 0) {
            b.append(n > 0 ? "missing " : "extra ").append(Math.abs(n)).append("x ").append(row);
            b.append('\n');
          }
        });
    return b.toString();
  }
}
