package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;

/**
 * {@link RenameFreeCheckpointFileManager} and a query checkpointing on HDFS (one in-process
 * MiniDFSCluster for the class): see {@link RemoteCheckpointTests}.
 */
class HdfsCheckpointIT extends RemoteCheckpointTests {
  static final java.nio.file.Path work = TestSessions.newWorkDir(HdfsCheckpointIT.class);
  private static MiniDfsFixture dfs;
  private static SparkSession spark;

  /** Client settings for a one-DataNode cluster (see MiniDfsFixture). */
  private static final Map<String, String> CLIENT_SETTINGS =
      Map.of(
          "dfs.replication", "1",
          "dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    Map<String, String> extra = new java.util.HashMap<>();
    CLIENT_SETTINGS.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = TestSessions.start("HdfsCheckpointIT", work, extra);
  }

  @AfterAll
  static void stop() {
    if (spark != null) {
      spark.stop();
    }
    if (dfs != null) {
      dfs.close();
    }
  }

  @Override
  protected SparkSession spark() {
    return spark;
  }

  @Override
  protected java.nio.file.Path localWork() {
    return work;
  }

  @Override
  protected String checkpointUri(String name) {
    return dfs.path("/checkpoints/" + name).toString();
  }

  @Override
  protected RequestCounts.Source requests() {
    return RequestCounts.hdfs(dfs.cluster());
  }

  @Override
  protected String renameKind() {
    return "rename";
  }

  @Override
  protected Path newRoot(String testName) {
    return dfs.path("/cfm/" + testName);
  }

  @Override
  protected Configuration conf() {
    Configuration conf = new Configuration();
    CLIENT_SETTINGS.forEach(conf::set);
    return conf;
  }

  @Override
  protected Configuration independentClientConf() {
    Configuration conf = conf();
    conf.setBoolean("fs.hdfs.impl.disable.cache", true);
    return conf;
  }

  @Override
  protected String storeName() {
    return "HDFS";
  }

  /**
   * Segment journals (the default) and log journals (opt-in) on real HDFS: the same output as
   * Spark's own provider through two restarts, and per batch the NameNode sees a fraction of the
   * requests of the same provider writing a file per commit and per log entry.
   */
  @Test
  @Order(3)
  void withJournalsTheQueryMatchesTheReferenceAndBatchesAskTheNameNodeForLittle() throws Exception {
    ClockedRun run = new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Append());
    ClockedRun.Result reference =
        run.run(
            TestSessions.HDFS, work.resolve("journal-reference"), AggregationIT.windowedSteps());
    ClockedRun.Result journaled =
        run.run(
            TestSessions.OURS,
            checkpointUri("e2e-journals"),
            AggregationIT.windowedSteps(),
            Map.of(CFM_KEY, OUR_CFM, StreamStateConf.LOG_JOURNAL, "true"));
    assertThat(journaled.rows()).isNotEmpty().containsExactlyElementsOf(reference.rows());
    // Spark's logs are journals, not entry files.
    for (String log : new String[] {"offsets", "commits"}) {
      FileStatus[] files =
          dfs.fileSystem().listStatus(dfs.path("/checkpoints/e2e-journals/" + log));
      assertThat(files)
          .as("%s of the journaled run", log)
          .allMatch(f -> f.getPath().getName().startsWith(LogJournalFile.NAME_PREFIX));
    }
    awaitQuiet();

    Map<String, Double> files =
        measure(
            TestSessions.OURS,
            Map.of(CFM_KEY, OUR_CFM, StreamStateConf.GROUP_COMMIT_JOURNAL, "false"),
            "requests-files");
    Map<String, Double> journals =
        measure(
            TestSessions.OURS,
            Map.of(CFM_KEY, OUR_CFM, StreamStateConf.LOG_JOURNAL, "true"),
            "requests-journals");
    Map<String, Map<String, Double>> columns = new java.util.LinkedHashMap<>();
    columns.put("journals", journals);
    columns.put("files", files);
    System.out.print(
        RequestCounts.table(
            "NameNode requests per batch on HDFS, ours with segment and log journals against"
                + " ours with a file per group commit and per log entry",
            columns));
    double journalTotal = journals.values().stream().mapToDouble(Double::doubleValue).sum();
    double fileTotal = files.values().stream().mapToDouble(Double::doubleValue).sum();
    // With journals the only files are the snapshots maintenance writes: 3 stores, each every
    // second version (TestSessions), 1.5 a batch. Log entries and group commits create none.
    // Maintenance runs on its own clock, so a snapshot of a version committed before the
    // measured window may land in it: at most one more per store (the counter sees no paths).
    assertThat(journals.get("create"))
        .as("creates per batch with journals")
        .isLessThanOrEqualTo(
            TestSessions.SHUFFLE_PARTITIONS / 2.0
                + (double) TestSessions.SHUFFLE_PARTITIONS / MEASURED_BATCHES);
    assertThat(journals.get("create") * 3).isLessThan(files.get("create"));
    assertThat(journalTotal * 2).as("all requests per batch").isLessThan(fileTotal);
  }

  /**
   * A restarted driver takes the log over from a zombie that is still running, by HDFS lease
   * recovery: the zombie's next append fails, and the new driver saw every entry it wrote.
   */
  @Test
  @Order(4)
  void aRestartedDriverFencesAZombieDriversLogJournalByLeaseRecovery() throws Exception {
    Path root = dfs.path("/cfm/fencing");
    Configuration withJournal = conf();
    withJournal.set(StreamStateConf.LOG_JOURNAL, "true");
    RenameFreeCheckpointFileManager zombie = new RenameFreeCheckpointFileManager(root, withJournal);
    write(zombie, new Path(root, "offsets/0"), logEntry("zero", 100), false);
    ProcessResources.restartForTests(false); // a new driver process; the old one lives on

    Configuration otherClient = independentClientConf();
    otherClient.set(StreamStateConf.LOG_JOURNAL, "true");
    RenameFreeCheckpointFileManager restarted =
        new RenameFreeCheckpointFileManager(root, otherClient);
    write(restarted, new Path(root, "offsets/1"), logEntry("one", 100), false);

    assertThatThrownBy(() -> write(zombie, new Path(root, "offsets/2"), logEntry("z", 100), false))
        .isInstanceOf(java.io.IOException.class);
    assertThat(
            java.util.Arrays.stream(restarted.list(new Path(root, "offsets")))
                .map(f -> f.getPath().getName()))
        .containsExactly("0", "1");
    assertThat(read(restarted, new Path(root, "offsets/0"))).isEqualTo(logEntry("zero", 100));
    ProcessResources.restartForTests(true);
  }
}
