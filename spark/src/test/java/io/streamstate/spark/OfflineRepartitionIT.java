package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.spark.OfflineRewriteCases.Case;
import io.streamstate.spark.repartition.OfflineRepartition;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Offline state repartitioning of a checkpoint of ours, 4 to 8 to 3 partitions between runs, for
 * every stateful operator (and under checkpoint format v2): with {@link OfflineRepartition} the
 * query resumes each time on the new partition count and its output equals an uninterrupted run on
 * Spark's HDFS-backed provider.
 *
 * <p>Spark 4.2's own runner ({@code OfflineStateRepartitionRunner}) on a checkpoint of ours: Spark
 * refuses it, by provider class name, when it reads the state ({@code StateDataSource.getTable}:
 * {@code internalOnlyReadAllColumnFamilies} is allowed for {@code RocksDBStateStoreProvider} only),
 * after it has already written the repartition batch's offset log entry, from which Spark refuses
 * to restart the query (an unfinished repartition): {@link OfflineRepartition} with the same
 * partition count completes that batch, and the query resumes with its output intact.
 */
class OfflineRepartitionIT {
  static final Path work = TestSessions.newWorkDir(OfflineRepartitionIT.class);
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    assumeTrue(TestSessions.sparkAtLeast(4, 2), "offline state repartitioning is Spark 4.2's");
    spark =
        TestSessions.start(
            "OfflineRepartitionIT", work, Map.of("spark.sql.shuffle.partitions", "4"));
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void sparksRunnerRefusesOurProviderByNameAndOursCompletesTheBatchItLeft() throws Exception {
    ClockedRun run = new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Update());
    Path ours = work.resolve("ours");
    List<String> refusals = new ArrayList<>();
    Runnable tryRepartition =
        () -> {
          long before = newestOffset(ours);
          try {
            ((org.apache.spark.sql.classic.SparkSession) spark)
                .streamingCheckpointManager()
                .repartition(ours.toUri().toString(), 8, true);
            refusals.add("not refused");
          } catch (RuntimeException e) {
            refusals.add(e.getMessage());
          }
          // The runner wrote its batch's offset entry before it failed: ours completes that
          // batch, as Spark's runner retries its own failed repartition batch.
          long after = newestOffset(ours);
          assertThat(after).as("offset entries of the refused repartition").isEqualTo(before + 1);
          assertThat(OfflineRepartition.run(spark, ours.toUri().toString(), 8, true))
              .isEqualTo(after);
        };
    List<String> reference =
        run.run(TestSessions.HDFS, work.resolve("reference"), steps(() -> {})).rows();

    List<String> actual = run.run(TestSessions.OURS, ours, steps(tryRepartition)).rows();

    assertThat(refusals).hasSize(1);
    assertThat(refusals.get(0))
        .contains("STATE_REPARTITION_INVALID_CHECKPOINT.UNSUPPORTED_PROVIDER")
        .contains(TestSessions.OURS);
    assertThat(actual).isNotEmpty().containsExactlyElementsOf(reference);
  }

  /**
   * Runs the case on our provider with a repartition to 8 and then to 3 between runs, and without
   * repartitioning on Spark's HDFS-backed provider; the outputs must be equal, and each run after a
   * repartition must have run on the new partition count.
   */
  private void repartitionsAndResumes(Case c, Map<String, String> oursConf) throws Exception {
    ClockedRun run = new ClockedRun(spark, c.inputs(), c.query(), c.mode());
    Path ours = work.resolve(c.name());
    String location = ours.toUri().toString();
    List<Long> repartitionBatches = new ArrayList<>();
    List<String> reference =
        run.run(
                TestSessions.HDFS,
                work.resolve(c.name() + "-reference"),
                OfflineRewriteCases.steps(c, () -> {}, () -> {}))
            .rows();

    List<String> actual =
        run.run(
                TestSessions.OURS,
                ours,
                OfflineRewriteCases.steps(
                    c,
                    () -> repartitionBatches.add(OfflineRepartition.run(spark, location, 8, true)),
                    () -> repartitionBatches.add(OfflineRepartition.run(spark, location, 3, true))),
                oursConf)
            .rows();

    assertThat(actual).as("%s: output", c.name()).isNotEmpty().containsExactlyElementsOf(reference);
    assertThat(repartitionBatches).hasSize(2);
    // The repartition batches pinned 8, then 3 partitions, and the runs after them used them.
    assertThat(shufflePartitions(ours, repartitionBatches.get(0))).isEqualTo(8);
    assertThat(shufflePartitions(ours, repartitionBatches.get(1))).isEqualTo(3);
    assertThat(shufflePartitions(ours, newestOffset(ours))).isEqualTo(3);
    assertThat(ours.resolve("state/0/7")).as("a partition of the run on 8").isDirectory();
    assertThat(newestOffset(ours)).isGreaterThan(repartitionBatches.get(1));
  }

  @Test
  void windowedAggregation() throws Exception {
    repartitionsAndResumes(OfflineRewriteCases.AGGREGATION, Map.of());
  }

  @Test
  void windowedAggregationUnderCheckpointFormatV2() throws Exception {
    repartitionsAndResumes(
        OfflineRewriteCases.AGGREGATION.named("aggregation-v2"),
        Map.of("spark.sql.streaming.stateStore.checkpointFormatVersion", "2"));
  }

  @Test
  void dropDuplicates() throws Exception {
    repartitionsAndResumes(OfflineRewriteCases.DEDUP, Map.of());
  }

  @Test
  void streamStreamJoin() throws Exception {
    repartitionsAndResumes(OfflineRewriteCases.JOIN, Map.of());
  }

  @Test
  void flatMapGroupsWithState() throws Exception {
    repartitionsAndResumes(OfflineRewriteCases.FLAT_MAP_GROUPS_WITH_STATE, Map.of());
  }

  @Test
  void refusesACheckpointOfAnotherProvider() throws Exception {
    ClockedRun run = new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Update());
    Path hdfs = work.resolve("hdfs-provider");
    run.run(TestSessions.HDFS, hdfs, new ClockedRun.Steps().data(0, ev("a", 100, 1)).tick());
    long before = newestOffset(hdfs);

    assertThatThrownBy(() -> OfflineRepartition.run(spark, hdfs.toUri().toString(), 8, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("HDFSBackedStateStoreProvider")
        .hasMessageContaining("Spark's own runner");
    assertThat(newestOffset(hdfs)).as("nothing written").isEqualTo(before);
  }

  /** The shuffle partition count pinned in an offset log entry (plain file, Spark's format). */
  private static int shufflePartitions(Path checkpoint, long batch) {
    try {
      String entry = Files.readString(checkpoint.resolve("offsets").resolve(Long.toString(batch)));
      var m =
          java.util.regex.Pattern.compile("\"spark.sql.shuffle.partitions\":\"(\\d+)\"")
              .matcher(entry);
      assertThat(m.find()).as("shuffle partitions in offsets/%s", batch).isTrue();
      return Integer.parseInt(m.group(1));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static ClockedRun.Steps steps(Runnable betweenRuns) {
    return new ClockedRun.Steps()
        .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("c", 102, 3))
        .tick()
        .restart(betweenRuns)
        .data(0, ev("a", 104, 5), ev("e", 111, 6), ev("f", 125, 7))
        .ticks(2);
  }

  private static long newestOffset(Path checkpoint) {
    try (Stream<Path> files = Files.list(checkpoint.resolve("offsets"))) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches("\\d+"))
          .mapToLong(Long::parseLong)
          .max()
          .orElse(-1);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
