package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.runtime.MemoryStream;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple3;

/**
 * Spark's checkpoint format v2 ({@code spark.sql.streaming.stateStore.checkpointFormatVersion=2})
 * with our provider: each store reports the commit it made by id, the driver records the ids in the
 * commit log and checks each task's base id against them (it fails the batch with {@code
 * STATE_STORE_BASE_CHECKPOINT_ID_MISMATCH} otherwise), and the next batch loads exactly the commit
 * the log names. Outputs equal Spark's HDFS-backed provider's under format v1 (it refuses v2).
 */
class CheckpointFormatV2IT {
  static final Path work = TestSessions.newWorkDir(CheckpointFormatV2IT.class);
  private static final String V2 = StreamStateConf.SPARK_CHECKPOINT_FORMAT_VERSION;
  private static SparkSession spark;

  /** Rows the first of each batch's two jobs received, per run (the function runs here). */
  private static final ConcurrentLinkedQueue<String> FIRST_JOB_ROWS = new ConcurrentLinkedQueue<>();

  @BeforeAll
  static void startSpark() {
    assumeTrue(TestSessions.sparkAtLeast(4, 0), "checkpoint format v2 exists from Spark 4.0 on");
    spark = TestSessions.start("CheckpointFormatV2IT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  private static Dataset<Row> windowedCounts(Dataset<Row> events) {
    return events
        .withWatermark("ts", "10 seconds")
        .groupBy(window(col("ts"), "10 seconds"), col("key"))
        .agg(count(lit(1)).as("n"), sum("value").as("total"));
  }

  @Test
  void windowedAggregationWithRestartsGivesTheReferenceOutputAndTheCommitLogNamesOurCommits()
      throws Exception {
    ClockedRun run = new ClockedRun(spark, 1, in -> windowedCounts(in.get(0)), OutputMode.Update());
    ClockedRun.Steps steps =
        new ClockedRun.Steps()
            .data(0, ev("a", 1, 1), ev("b", 2, 2))
            .tick()
            .data(0, ev("a", 3, 3), ev("c", 12, 4))
            .tick()
            .restart()
            .data(0, ev("a", 4, 5), ev("b", 14, 6), ev("d", 25, 7))
            .tick()
            .restart()
            .data(0, ev("c", 15, 8), ev("e", 40, 9))
            .tick();
    Path ours = work.resolve("agg-ours");
    List<String> expected = run.run(TestSessions.HDFS, work.resolve("agg-reference"), steps).rows();
    long parsedBefore = CheckpointIds.parsedForTests();

    List<String> actual = run.run(TestSessions.OURS, ours, steps, Map.of(V2, "2")).rows();

    assertThat(expected).hasSizeGreaterThan(4);
    assertThat(actual).containsExactlyElementsOf(expected);
    assertThat(CheckpointIds.parsedForTests()).isGreaterThan(parsedBefore);
    assertCommitLogNamesOurCommits(ours);
  }

  /**
   * Two jobs per batch (a foreachBatch function that reads its batch twice, as writing to two sinks
   * does): each version is committed twice, with different ids, and the driver keeps either; the
   * next batch must load that one, or its base id would not match and the batch would fail.
   */
  @Test
  void twoJobsPerBatchCommitEachVersionTwiceAndTheNextBatchLoadsTheOneTheLogNames()
      throws Exception {
    List<String> expected = twoJobRun(TestSessions.HDFS, work.resolve("two-jobs-reference"), "1");
    long parsedBefore = CheckpointIds.parsedForTests();

    List<String> actual = twoJobRun(TestSessions.OURS, work.resolve("two-jobs-ours"), "2");

    assertThat(expected).hasSizeGreaterThan(4);
    assertThat(actual).containsExactlyElementsOf(expected);
    assertThat(CheckpointIds.parsedForTests()).isGreaterThan(parsedBefore);
    assertCommitLogNamesOurCommits(work.resolve("two-jobs-ours"));
  }

  private static List<String> twoJobRun(String provider, Path checkpoint, String format)
      throws Exception {
    spark.conf().set(TestSessions.PROVIDER_CLASS, provider);
    spark.conf().set(V2, format);
    FIRST_JOB_ROWS.clear();
    try {
      MemoryStream<Tuple3<String, Timestamp, Integer>> input =
          SparkLineTestApi.memoryStream(ClockedRun.eventEncoder(), spark);
      List<List<Tuple3<String, Timestamp, Integer>>> batches =
          List.of(
              List.of(ev("a", 1, 1), ev("b", 2, 2)),
              List.of(ev("a", 3, 3), ev("c", 12, 4)),
              List.of(ev("a", 4, 5), ev("b", 14, 6)),
              List.of(ev("c", 15, 8), ev("b", 16, 9)));
      for (int half = 0; half < 2; half++) {
        StreamingQuery query =
            windowedCounts(input.toDS().toDF("key", "ts", "value"))
                .writeStream()
                .outputMode(OutputMode.Update())
                .option("checkpointLocation", checkpoint.toString())
                .foreachBatch(
                    (VoidFunction2<Dataset<Row>, Long>)
                        (batch, id) -> {
                          for (Row r : batch.collectAsList()) {
                            FIRST_JOB_ROWS.add(id + ":" + r);
                          }
                          batch.count(); // the second job: every store commits its version again
                        })
                .start();
        try {
          for (List<Tuple3<String, Timestamp, Integer>> b :
              batches.subList(half * 2, half * 2 + 2)) {
            input.addData(ScalaInterop.seq(b));
            query.processAllAvailable();
          }
          assertThat(query.exception().isDefined()).isFalse();
        } finally {
          query.stop();
        }
      }
      List<String> rows = new ArrayList<>(FIRST_JOB_ROWS);
      rows.sort(null);
      return rows;
    } finally {
      spark.conf().unset(V2);
      spark.conf().unset(TestSessions.PROVIDER_CLASS);
    }
  }

  /**
   * The newest commit log entry names, for every partition of the operator, one of our commit ids
   * (16 hex digits): the format Spark wrote is v2, and its ids are ours.
   */
  private static void assertCommitLogNamesOurCommits(Path checkpoint) throws IOException {
    Path commits = checkpoint.resolve("commits");
    Path newest;
    try (Stream<Path> files = Files.list(commits)) {
      newest =
          files
              .filter(p -> p.getFileName().toString().matches("\\d+"))
              .max((x, y) -> Long.compare(batchOf(x), batchOf(y)))
              .orElseThrow();
    }
    List<String> lines = Files.readAllLines(newest, StandardCharsets.UTF_8);
    assertThat(lines.get(0)).as("commit log format in %s", newest).isIn("v2", "v3");
    JsonNode ids = new ObjectMapper().readTree(lines.get(1)).get("stateUniqueIds");
    assertThat(ids).as("stateUniqueIds in %s", newest).isNotNull();
    JsonNode partitions = ids.get("0");
    assertThat(partitions.size()).isEqualTo(TestSessions.SHUFFLE_PARTITIONS);
    for (JsonNode partition : partitions) {
      assertThat(partition.size()).isEqualTo(1);
      assertThat(partition.get(0).asText()).matches("[0-9a-f]{16}");
    }
  }

  private static long batchOf(Path p) {
    return Long.parseLong(p.getFileName().toString());
  }
}
