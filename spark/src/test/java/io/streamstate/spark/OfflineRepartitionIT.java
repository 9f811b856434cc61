package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.expr;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Spark 4.2's offline state repartitioning ({@code OfflineStateRepartitionRunner}, reached through
 * the session's {@code streamingCheckpointManager().repartition}) on checkpoints of ours: the query
 * runs on 4 shuffle partitions, stops, is repartitioned to 8, resumes, stops, is repartitioned to
 * 3, and resumes again. Spark reads each store's rows through our provider and writes them into the
 * new partitions through {@code getStore(version, None, loadEmpty = true)}, whose commit we publish
 * whole, as a snapshot. The output equals Spark's HDFS-backed provider's with the same input and
 * stops but no repartitioning, for an aggregation, a deduplication, a stream-stream join and
 * flatMapGroupsWithState.
 */
class OfflineRepartitionIT {
  static final Path work = TestSessions.newWorkDir(OfflineRepartitionIT.class);
  private static SparkSession spark;
  private final List<String> repartitioned = new ArrayList<>();

  @BeforeAll
  static void startSpark() {
    assumeTrue(TestSessions.sparkAtLeast(4, 2), "offline state repartitioning is Spark 4.2's");
    spark = TestSessions.start("OfflineRepartitionIT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  /** Repartitions the stopped query's checkpoint with Spark's runner. */
  private Runnable repartition(Path checkpoint, int partitions) {
    return () -> {
      ((org.apache.spark.sql.classic.SparkSession) spark)
          .streamingCheckpointManager()
          .repartition(checkpoint.toUri().toString(), partitions, true);
      repartitioned.add(checkpoint.getFileName() + "->" + partitions);
    };
  }

  /**
   * Runs {@code run} with our provider, repartitioned 4 -> 8 -> 3 at the two stops, and with
   * Spark's HDFS-backed provider, only stopped; asserts equal, non-empty outputs.
   */
  private void assertRepartitionedRunMatches(
      String name, ClockedRun run, Function<Runnable[], ClockedRun.Steps> steps) throws Exception {
    Map<String, String> conf = Map.of("spark.sql.shuffle.partitions", "4");
    Path ours = work.resolve(name + "-ours");
    ClockedRun.Result reference =
        run.run(
            TestSessions.HDFS,
            work.resolve(name + "-reference"),
            steps.apply(new Runnable[] {() -> {}, () -> {}}),
            conf);
    ClockedRun.Result actual =
        run.run(
            TestSessions.OURS,
            ours,
            steps.apply(new Runnable[] {repartition(ours, 8), repartition(ours, 3)}),
            conf);

    assertThat(repartitioned)
        .containsExactly(ours.getFileName() + "->8", ours.getFileName() + "->3");
    assertThat(actual.rows()).isNotEmpty().containsExactlyElementsOf(reference.rows());
    assertThat(actual.lastNumRowsTotal()).isEqualTo(reference.lastNumRowsTotal());
    // The resumed query did run on 3 partitions (the runner pinned them in the offset log).
    assertThat(
            actual
                .allProgress()
                .get(actual.allProgress().size() - 1)
                .stateOperators()[0]
                .numShufflePartitions())
        .isEqualTo(3);
  }

  @Test
  void windowedAggregation() throws Exception {
    assertRepartitionedRunMatches(
        "agg",
        new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Update()),
        between ->
            new ClockedRun.Steps()
                .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("c", 102, 3), ev("d", 103, 4))
                .tick()
                .data(0, ev("a", 104, 5), ev("e", 111, 6), ev("f", 112, 7))
                .tick()
                .restart(between[0])
                .data(0, ev("a", 105, 8), ev("e", 113, 9), ev("g", 121, 10), ev("h", 122, 1))
                .tick()
                .restart(between[1])
                .data(0, ev("e", 118, 2), ev("g", 125, 3), ev("i", 140, 4))
                .ticks(2));
  }

  @Test
  void deduplication() throws Exception {
    assertRepartitionedRunMatches(
        "dedup",
        new ClockedRun(
            spark,
            1,
            in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicates("key", "ts"),
            OutputMode.Append()),
        between ->
            new ClockedRun.Steps()
                .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 100, 3), ev("c", 102, 4))
                .tick()
                .restart(between[0])
                .data(0, ev("a", 100, 5), ev("b", 101, 6), ev("d", 105, 7), ev("e", 106, 8))
                .tick()
                .restart(between[1])
                .data(0, ev("d", 105, 9), ev("c", 102, 1), ev("f", 120, 2))
                .ticks(2));
  }

  @Test
  void streamStreamJoin() throws Exception {
    assertRepartitionedRunMatches(
        "join",
        new ClockedRun(
            spark,
            2,
            in -> {
              Dataset<Row> left =
                  in.get(0)
                      .select(col("key").as("lkey"), col("ts").as("lts"), col("value").as("lval"))
                      .withWatermark("lts", "10 seconds");
              Dataset<Row> right =
                  in.get(1)
                      .select(col("key").as("rkey"), col("ts").as("rts"), col("value").as("rval"))
                      .withWatermark("rts", "10 seconds");
              return left.join(
                  right,
                  expr(
                      "lkey = rkey AND rts BETWEEN lts - INTERVAL 5 SECONDS AND lts + INTERVAL 5"
                          + " SECONDS"),
                  "leftOuter");
            },
            OutputMode.Append()),
        between ->
            new ClockedRun.Steps()
                .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 102, 3), ev("c", 103, 4))
                .data(1, ev("a", 103, 10), ev("x", 100, 11))
                .tick()
                .restart(between[0])
                .data(0, ev("d", 110, 5))
                .data(1, ev("b", 104, 12), ev("c", 99, 13), ev("d", 112, 14))
                .tick()
                .restart(between[1])
                .data(0, ev("e", 130, 6))
                .data(1, ev("e", 129, 16), ev("a", 131, 17))
                .ticks(3));
  }

  @Test
  void flatMapGroupsWithState() throws Exception {
    assertRepartitionedRunMatches(
        "fmgws",
        new ClockedRun(
            spark,
            1,
            in ->
                in.get(0)
                    .withWatermark("ts", "10 seconds")
                    .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                    .flatMapGroupsWithState(
                        new FlatMapGroupsWithStateIT.EventTimeSummer(),
                        OutputMode.Update(),
                        Encoders.LONG(),
                        Encoders.STRING(),
                        GroupStateTimeout.EventTimeTimeout())
                    .toDF(),
            OutputMode.Update()),
        between ->
            new ClockedRun.Steps()
                .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 102, 3), ev("c", 103, 4))
                .tick()
                .restart(between[0])
                .data(0, ev("a", 110, 4), ev("d", 112, 5), ev("b", 130, 6))
                .tick()
                .restart(between[1])
                .data(0, ev("c", 135, 7), ev("e", 160, 8))
                .ticks(2));
  }
}
