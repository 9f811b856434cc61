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
 * What the soak's seed 483 (and the log-journal schedules' seed 1004) met, shown to be Spark's
 * behaviour with its own provider: the input regrouped as seed 483's fault regrouped it (the left
 * source's last file a batch early), and the query restarted either before the last data batch's
 * commit log entry (Spark runs that batch again; the left side has no data in it, and Spark, which
 * keeps only the global watermark across a restart, counts a side without data as 0, so the
 * watermark stays) or after it (Spark runs a no-data batch only after a batch of the same run).
 * Either way the no-data batch that emits the closed windows does not run until more input comes.
 * {@code HDFSBackedStateStoreProvider} and ours give the same rows, fewer than a run without the
 * restart, and their last batches ran with the same watermark, lower than that run's ({@link
 * SparkLogs#lastBatchWatermarkMs}); one more input file ({@link ReliabilityQuery#writeDrainInput})
 * makes both emit what a run without the restart given the same file emits: the fault schedules'
 * oracle for such runs.
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
    Run fullHdfs = run(ReliabilityQuery.HDFS, "hdfs-full", List.of());
    Run fullOurs = run(ReliabilityQuery.OURS, "ours-full", List.of());
    assertThat(fullOurs.rows()).isEqualTo(fullHdfs.rows()).hasSizeGreaterThan(10);
    assertThat(fullOurs.watermarkMs()).isEqualTo(fullHdfs.watermarkMs());
    List<String> drainedFull = drain(ReliabilityQuery.HDFS, fullHdfs);
    assertThat(drainedFull).containsAll(fullHdfs.rows());

    // Restarted before the last data batch's commit log entry (Spark re-runs that batch, in which
    // the left side has no data), and after it (before the no-data batch's offset log entry).
    for (List<String> removed :
        List.of(
            List.of("commits/2", "commits/3", "offsets/3"), List.of("commits/3", "offsets/3"))) {
      String name = removed.size() == 3 ? "restarted-before-commit-2" : "restarted-after-commit-2";
      Run hdfs = run(ReliabilityQuery.HDFS, "hdfs-" + name, removed);
      Run ours = run(ReliabilityQuery.OURS, "ours-" + name, removed);

      assertThat(ours.rows()).as(name).isEqualTo(hdfs.rows());
      assertThat(hdfs.rows())
          .as("%s: rows, Spark's own provider", name)
          .hasSizeLessThan(fullHdfs.rows().size());
      // What the fault schedules' oracle relies on: the last batch ran with a lower watermark,
      assertThat(hdfs.watermarkMs()).as(name).isLessThan(fullHdfs.watermarkMs());
      assertThat(ours.watermarkMs()).as(name).isEqualTo(hdfs.watermarkMs());
      // and one more input file makes the owed windows come out, as in a run that had it all
      // along.
      assertThat(drain(ReliabilityQuery.HDFS, hdfs)).as(name).isEqualTo(drainedFull);
      assertThat(drain(ReliabilityQuery.OURS, ours)).as(name).isEqualTo(drainedFull);
    }
  }

  /** A run's own input copy, checkpoint and output; its rows and its last batch's watermark. */
  private record Run(Path dir, List<String> rows, long watermarkMs) {}

  /**
   * Runs the query to the end on its own copy of the input; with files to remove, then removes them
   * from the checkpoint (as a failure of the create of the first leaves it) and the no-data batch's
   * output, and starts the query again.
   */
  private static Run run(String provider, String name, List<String> removed) throws Exception {
    Path dir = work.resolve(name);
    Path runInput = ReliabilityQuery.copyInput(input, dir.resolve("input"));
    String checkpoint = dir.resolve("checkpoint").toUri().toString();
    ReliabilityQuery.runToEnd(
        spark, provider, runInput, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    if (!removed.isEmpty()) {
      assertThat(dir.resolve("out/batch-00003.txt")).as("the no-data batch's output").exists();
      for (String f : removed) {
        Files.delete(dir.resolve("checkpoint").resolve(f));
      }
      Files.delete(dir.resolve("out/batch-00003.txt"));
      ReliabilityQuery.runToEnd(
          spark, provider, runInput, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    }
    long watermark =
        new SparkLogs(checkpoint, spark.sessionState().newHadoopConf()).lastBatchWatermarkMs();
    return new Run(dir, ReliabilityQuery.readOutput(dir.resolve("out")), watermark);
  }

  /** Adds the drain file to the run's input, runs the query on, and returns all its rows. */
  private static List<String> drain(String provider, Run run) throws Exception {
    ReliabilityQuery.drain(
        spark,
        provider,
        run.dir().resolve("input"),
        run.dir().resolve("checkpoint").toUri().toString(),
        run.dir().resolve("out"));
    return ReliabilityQuery.readOutput(run.dir().resolve("out"));
  }
}
