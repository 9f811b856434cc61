package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

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
 * Spark 4.2's offline state repartitioning ({@code OfflineStateRepartitionRunner}) on a checkpoint
 * of ours: Spark refuses it, by provider class name, when it reads the state ({@code
 * StateDataSource.getTable}: {@code internalOnlyReadAllColumnFamilies} is allowed for {@code
 * RocksDBStateStoreProvider} only), after it has already written the repartition batch's offset log
 * entry. Until that entry is deleted, Spark refuses to restart the query (an unfinished
 * repartition); once it is, the query resumes with its output intact. What Spark's writer asks of
 * our provider ({@code loadEmpty}) works: {@code LoadEmptyTest}.
 */
class OfflineRepartitionIT {
  static final Path work = TestSessions.newWorkDir(OfflineRepartitionIT.class);
  private static SparkSession spark;

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

  @Test
  void sparksRunnerRefusesOurProviderByNameAndTheQueryResumesOnceItsOffsetEntryIsDeleted()
      throws Exception {
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
          // The runner wrote its batch's offset entry before it failed: delete it, as the docs
          // tell users to.
          long after = newestOffset(ours);
          assertThat(after).as("offset entries of the refused repartition").isEqualTo(before + 1);
          delete(ours.resolve("offsets").resolve(Long.toString(after)));
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

  private static void delete(Path file) {
    try {
      Files.delete(file);
      Files.deleteIfExists(file.resolveSibling("." + file.getFileName() + ".crc"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
