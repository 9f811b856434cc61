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
 * runs that batch again and stops: the no-data batch that would have emitted the windows the
 * watermark closes does not run until new input comes. {@code HDFSBackedStateStoreProvider} and
 * ours give the same rows, fewer than a run without the restart.
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
  void sparksProviderAndOursLoseTheSamePendingNoDataBatch() throws Exception {
    List<String> fullHdfs = runAndRestart(ReliabilityQuery.HDFS, "hdfs", false);
    List<String> restartedHdfs = runAndRestart(ReliabilityQuery.HDFS, "hdfs", true);
    List<String> fullOurs = runAndRestart(ReliabilityQuery.OURS, "ours", false);
    List<String> restartedOurs = runAndRestart(ReliabilityQuery.OURS, "ours", true);

    assertThat(fullOurs).isEqualTo(fullHdfs).hasSizeGreaterThan(10);
    assertThat(restartedOurs).isEqualTo(restartedHdfs);
    assertThat(restartedHdfs)
        .as("rows after the restart, Spark's own provider")
        .hasSizeLessThan(fullHdfs.size());
  }

  /**
   * Runs the query to the end; with {@code restart}, then removes what the last data batch's commit
   * and the no-data batch after it wrote (commit log entries 2 and 3, offset log entry 3, that
   * batch's output), as a failure of the create of {@code commits/2} leaves it, and starts again.
   */
  private static List<String> runAndRestart(String provider, String name, boolean restart)
      throws Exception {
    Path dir = work.resolve(name + (restart ? "-restarted" : "-full"));
    String checkpoint = dir.resolve("checkpoint").toUri().toString();
    ReliabilityQuery.runToEnd(
        spark, provider, input, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    if (restart) {
      assertThat(dir.resolve("out/batch-00003.txt")).as("the no-data batch's output").exists();
      for (String f : List.of("commits/2", "commits/3", "offsets/3")) {
        Files.delete(dir.resolve("checkpoint").resolve(f));
      }
      Files.delete(dir.resolve("out/batch-00003.txt"));
      ReliabilityQuery.runToEnd(
          spark, provider, input, checkpoint, dir.resolve("out"), ReliabilityQuery.NO_FAULTS, 0);
    }
    return ReliabilityQuery.readOutput(dir.resolve("out"));
  }
}
