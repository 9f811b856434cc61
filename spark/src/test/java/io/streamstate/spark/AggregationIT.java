package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Streaming aggregations give the same output with our provider as with Spark's HDFS-backed one, on
 * the same deterministic input, including across restarts.
 */
class AggregationIT {
  static final Path work = TestSessions.newWorkDir(AggregationIT.class);
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark = TestSessions.start("AggregationIT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
    TestSessions.assertHedgedIfForced();
  }

  /** Late, on-time and window-closing events, with restarts in the middle. */
  static ClockedRun.Steps windowedSteps() {
    return new ClockedRun.Steps()
        .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 105, 3))
        .tick()
        .data(0, ev("a", 112, 4), ev("c", 115, 5))
        .tick()
        .restart()
        .data(0, ev("b", 108, 6), ev("a", 125, 7)) // b@108: late, its window is still open
        .tick()
        .tick() // watermark 115: window [100, 110) closes
        .data(0, ev("c", 101, 9), ev("d", 140, 1)) // c@101: too late, dropped
        .tick()
        .tick()
        .restart()
        .tick()
        .data(0, ev("a", 150, 2), ev("a", 151, 3), ev("e", 152, 4))
        .tick()
        .data(0, ev("z", 300, 1)) // pushes the watermark past every earlier window
        .ticks(2);
  }

  private static ClockedRun windowed(OutputMode mode) {
    return new ClockedRun(spark, 1, AggregationIT::windowedQuery, mode);
  }

  /** Counts and sums per key in 10-second windows, with a 10-second watermark. */
  static Dataset<Row> windowedQuery(List<Dataset<Row>> in) {
    return in.get(0)
        .withWatermark("ts", "10 seconds")
        .groupBy(window(col("ts"), "10 seconds"), col("key"))
        .agg(count(lit(1)).as("n"), sum("value").as("total"));
  }

  @Test
  void windowedAggregationInAppendModeMatchesHdfsProvider() throws Exception {
    ClockedRun run = windowed(OutputMode.Append());
    ClockedRun.Result ours =
        run.run(TestSessions.OURS, work.resolve("append-ours"), windowedSteps());
    ClockedRun.Result hdfs =
        run.run(TestSessions.HDFS, work.resolve("append-hdfs"), windowedSteps());

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    // Window [100, 110): a = 1 + 3, b = 2 + 6 (the late b@108 counted, the too-late c@101 not).
    assertThat(ours.rows()).anyMatch(r -> r.endsWith(",a,2,4]"));
    assertThat(ours.rows()).anyMatch(r -> r.endsWith(",b,2,8]"));
    assertThat(ours.rows()).noneMatch(r -> r.endsWith(",c,1,9]"));
  }

  @Test
  void windowedAggregationInUpdateModeMatchesHdfsProvider() throws Exception {
    ClockedRun run = windowed(OutputMode.Update());
    ClockedRun.Result ours =
        run.run(TestSessions.OURS, work.resolve("update-ours"), windowedSteps());
    ClockedRun.Result hdfs =
        run.run(TestSessions.HDFS, work.resolve("update-hdfs"), windowedSteps());

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    // Update mode emits the running value of window [100, 110) for a twice... and b's final 2, 8.
    assertThat(ours.rows()).anyMatch(r -> r.endsWith(",b,2,8]"));
  }

  @Test
  void globalAggregationInCompleteModeMatchesHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in ->
                in.get(0)
                    .groupBy(col("key"))
                    .agg(count(lit(1)).as("n"), sum("value").as("total"), max("ts").as("last")),
            OutputMode.Complete());
    ClockedRun.Result ours =
        run.run(TestSessions.OURS, work.resolve("complete-ours"), windowedSteps());
    ClockedRun.Result hdfs =
        run.run(TestSessions.HDFS, work.resolve("complete-hdfs"), windowedSteps());

    assertThat(ours.rows()).hasSize(6).containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    assertThat(ours.rows()).anyMatch(r -> r.startsWith("[a,6,20,"));
  }
}
