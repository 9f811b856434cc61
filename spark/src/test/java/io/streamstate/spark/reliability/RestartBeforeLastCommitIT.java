package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the soak's seed 483 met, shown to be Spark's behaviour with its own provider: the input
 * regrouped as that schedule's fault regrouped it (the left source's last file a batch early), and
 * the query restarted after the last data batch's sink but before its commit log entry. Spark then
 * runs that batch again, in which the left side has no data, so the watermark stays where it was
 * and the no-data batch that would have emitted the closed windows does not run until more input
 * comes on both sides. {@code HDFSBackedStateStoreProvider} and ours give the same rows, fewer than
 * a run without the restart, and end with the same watermark, lower than that run's ({@link
 * SparkLogs#finalWatermarkMs} says why); one more input file ({@link
 * ReliabilityQuery#writeDrainInput}) makes both emit what a run without the restart given the same
 * file emits: the fault schedules' oracle for such runs.
 */
class RestartBeforeLastCommitIT {
  private static final Path work = Sessions.newWorkDir(RestartBeforeLastCommitIT.class);
  private static final Path input = work.resolve("input");
  private static SparkSession spark;

  @BeforeAll
  static void start() {
    spark =
        ReliabilityQuery.start(
            "RestartBeforeLastCommitIT", "local[2]", ReliabilityQuery.sessionConf(work));
    Path original = work.resolve("original");
    ReliabilityQuery.writeInput(original, 7, 3);
    Map<String, List<List<String>>> groups = new LinkedHashMap<>();
    groups.put("left", List.of(List.of(part(0)), List.of(part(1), part(2))));
    groups.put("right", List.of(List.of(part(0)), List.of(part(1)), List.of(part(2))));
    new BatchGrouping(groups).writeRegroupedInput(original, input);
  }

  @AfterAll
  static void stop() {
    spark.stop();
  }

  private static String part(int i) {
    return String.format("part-%05d.json", i);
  }

  @Test
  void sparksProviderAndOursLoseTheSamePendingNoDataBatchAndEmitItOnTheNextInput()
      throws Exception {
    Run fullHdfs = run(ReliabilityQuery.HDFS, "hdfs-full", false);
    Run restartedHdfs = run(ReliabilityQuery.HDFS, "hdfs-restarted", true);
    Run fullOurs = run(ReliabilityQuery.OURS, "ours-full", false);
    Run restartedOurs = run(ReliabilityQuery.OURS, "ours-restarted", true);

    assertThat(fullOurs.rows()).isEqualTo(fullHdfs.rows()).hasSizeGreaterThan(10);
    assertThat(restartedOurs.rows()).isEqualTo(restartedHdfs.rows());
    assertThat(restartedHdfs.rows())
        .as("rows after the restart, Spark's own provider")
        .hasSizeLessThan(fullHdfs.rows().size());
    // What the fault schedules' oracle relies on: the restarted runs end with a lower watermark,
    assertThat(fullOurs.watermarkMs()).isEqualTo(fullHdfs.watermarkMs());
    assertThat(restartedHdfs.watermarkMs()).isLessThan(fullHdfs.watermarkMs());
    assertThat(restartedOurs.watermarkMs()).isEqualTo(restartedHdfs.watermarkMs());
    // and one more input file makes the owed windows come out, as in a run that had it all along.
    List<String> drainedHdfs = drain(ReliabilityQuery.HDFS, restartedHdfs);
    List<String> drainedOurs = drain(ReliabilityQuery.OURS, restartedOurs);
    List<String> drainedFull = drain(ReliabilityQuery.HDFS, fullHdfs);
    assertThat(drainedHdfs).isEqualTo(drainedFull).containsAll(fullHdfs.rows());
    assertThat(drainedOurs).isEqualTo(drainedFull);
  }

  /** A run's own input copy, checkpoint and output; its rows and the watermark it ended with. */
  private record Run(Path dir, List<String> rows, long watermarkMs) {}

  /**
   * Runs the query to the end on its own copy of the input; with {@code restart}, then removes what
   * the last data batch's commit and the no-data batch after it wrote (commit log entries 2 and 3,
   * offset log entry 3, that batch's output), as a failure of the create of {@code commits/2}
   * leaves it, and starts again.
   */
  private static Run run(String provider, String name, boolean restart) throws Exception {
    Path dir = work.resolve(name);
    Path runInput = ReliabilityQuery.copyInput(input, dir.resolve("input"));
    String checkpoint = dir.resolve("checkpoint").toUri().toString();
    ReliabilityQuery.runToEnd(
        spark, provider, runInput, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    if (restart) {
      assertThat(dir.resolve("out/batch-00003.txt")).as("the no-data batch's output").exists();
      for (String f : List.of("commits/2", "commits/3", "offsets/3")) {
        Files.delete(dir.resolve("checkpoint").resolve(f));
      }
      Files.delete(dir.resolve("out/batch-00003.txt"));
      ReliabilityQuery.runToEnd(
          spark, provider, runInput, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    }
    long watermark =
        new SparkLogs(checkpoint, spark.sessionState().newHadoopConf()).finalWatermarkMs();
    return new Run(dir, ReliabilityQuery.readOutput(dir.resolve("out")), watermark);
  }

  /** Adds the drain file to the run's input, runs the query on, and returns all its rows. */
  private static List<String> drain(String provider, Run run) throws Exception {
    ReliabilityQuery.writeDrainInput(run.dir().resolve("input"));
    ReliabilityQuery.runToEnd(
        spark,
        provider,
        run.dir().resolve("input"),
        run.dir().resolve("checkpoint").toUri().toString(),
        run.dir().resolve("out"),
        ReliabilityQuery.NO_FAULTS,
        0);
    return ReliabilityQuery.readOutput(run.dir().resolve("out"));
  }
}
