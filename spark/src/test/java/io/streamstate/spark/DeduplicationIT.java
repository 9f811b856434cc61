package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** dropDuplicates and dropDuplicatesWithinWatermark: same output as the HDFS-backed provider. */
class DeduplicationIT {
  static final Path work = TestSessions.newWorkDir(DeduplicationIT.class);
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark = TestSessions.start("DeduplicationIT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
    TestSessions.assertHedgedIfForced();
  }

  private static ClockedRun.Steps steps() {
    return new ClockedRun.Steps()
        .data(0, ev("a", 100, 1), ev("a", 100, 2), ev("b", 101, 3), ev("a", 103, 4))
        .tick()
        .data(0, ev("a", 100, 5), ev("b", 101, 6), ev("c", 111, 7))
        .tick()
        .restart()
        .data(0, ev("a", 104, 8), ev("c", 111, 9), ev("d", 125, 10)) // watermark -> 115
        .tick()
        .tick()
        .data(0, ev("a", 100, 11), ev("b", 118, 12), ev("c", 111, 13)) // a@100 is too late now
        .tick()
        .restart()
        .data(0, ev("b", 118, 14), ev("e", 160, 15))
        .tick()
        .data(0, ev("b", 119, 16), ev("b", 118, 17))
        .ticks(2);
  }

  @Test
  void dropDuplicatesWithWatermarkMatchesHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicates("key", "ts"),
            OutputMode.Append());
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("dd-ours"), steps());
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("dd-hdfs"), steps());

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    assertThat(ours.rows()).filteredOn(r -> r.startsWith("[a,")).hasSize(3); // a@100, @103, @104
  }

  @Test
  void dropDuplicatesWithoutWatermarkMatchesHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(spark, 1, in -> in.get(0).dropDuplicates("key"), OutputMode.Append());
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("ddk-ours"), steps());
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("ddk-hdfs"), steps());

    assertThat(ours.rows()).hasSize(5).containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
  }

  @Test
  void dropDuplicatesWithinWatermarkMatchesHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicatesWithinWatermark("key"),
            OutputMode.Append());
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("ddw-ours"), steps());
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("ddw-hdfs"), steps());

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
  }
}
