package io.streamstate.cli;

import static io.streamstate.cli.Cli.list;
import static io.streamstate.cli.Cli.map;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command on a checkpoint on HDFS (an in-process MiniDFSCluster) that a real query wrote with
 * our provider, our checkpoint file manager and its log journal: inspect, verify, a damaged
 * snapshot, and export-logs after which Spark's default manager (FileContext) resumes the query.
 */
class HdfsCheckpointIT {
  static final Path work = SparkQueries.newWorkDir(HdfsCheckpointIT.class);
  private static MiniDfsFixture dfs;
  private static SparkSession spark;
  private static String checkpoint;
  private static SparkQueries.DedupCount query;

  /** Client settings for a one-DataNode cluster (as the hadoop and spark modules' ITs). */
  private static final Map<String, String> CLIENT =
      Map.of(
          "dfs.replication", "1",
          "dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");

  private static final Map<String, String> OURS_JOURNALED =
      Map.of(
          SparkQueries.PROVIDER_CLASS, SparkQueries.OURS,
          SparkQueries.CFM_CLASS, SparkQueries.OUR_CFM,
          StreamStateConf.LOG_JOURNAL, "true");

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    Map<String, String> extra = new HashMap<>();
    CLIENT.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = SparkQueries.start("HdfsCheckpointIT", work, extra);
    checkpoint = dfs.path("/checkpoints/q").toString();
    query = new SparkQueries.DedupCount(spark, checkpoint, "t_hdfs");
    query.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    query.stop(OURS_JOURNALED);
    // The driver goes away: its log journals are closed, as at its exit.
    LogJournals.of(ProcessResources.shared()).close();
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
    Thread.sleep(1500); // a stopped query's maintenance may still upload a snapshot
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

  @Test
  void inspectVerifyAndExportLogsOnHdfs() throws Exception {
    Cli.Run inspect = Cli.run(CLIENT, "inspect", checkpoint, "--json");
    assertThat(inspect.exit()).as(inspect.toString()).isZero();
    Map<String, Object> r = inspect.json();
    assertThat(r.get("checkpoint")).isEqualTo(checkpoint);
    assertThat(r.get("lastCommittedBatch")).isEqualTo(3L);
    assertThat(map(r.get("offsets")).get("layout")).isEqualTo("journal");
    assertThat(list(r.get("operators"))).hasSize(2);
    for (Map<String, Object> op : list(r.get("operators"))) {
      for (Map<String, Object> s : list(op.get("stores"))) {
        assertThat(s.get("provider")).isEqualTo("streamstate");
        assertThat(s.get("recoverable")).isEqualTo(true);
      }
    }

    Cli.Run verify = Cli.run(CLIENT, "verify", checkpoint);
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("4 of 4 stores recoverable at version 4");

    Cli.Run export = Cli.run(CLIENT, "export-logs", checkpoint);
    assertThat(export.exit()).as(export.toString()).isZero();
    assertThat(export.out()).contains("offsets: wrote 4 entries from the journal (batches 0-3)");
    FileStatus[] offsets = dfs.fileSystem().listStatus(dfs.path("/checkpoints/q/offsets"));
    assertThat(Arrays.stream(offsets).map(f -> f.getPath().getName()))
        .containsExactlyInAnyOrder("0", "1", "2", "3");

    // Spark's default checkpoint file manager (FileContext on HDFS) resumes from the files.
    spark.conf().unset(SparkQueries.CFM_CLASS);
    try {
      query.start(Map.of()).batch(10, 2, 11).batch(12);
      query.stop(Map.of());
    } finally {
      spark.conf().set(SparkQueries.CFM_CLASS, SparkQueries.SPARK_FS_CFM);
    }
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
    Thread.sleep(1500);
    Cli.Run after = Cli.run(CLIENT, "verify", checkpoint);
    assertThat(after.exit()).as(after.toString()).isZero();
    assertThat(after.out()).contains("batches 0-5 (files)");
  }

  @Test
  void verifyNamesADamagedSnapshotOnHdfs() throws Exception {
    // A copy of the checkpoint, so that the other test's checkpoint stays whole.
    org.apache.hadoop.fs.Path copy = dfs.path("/checkpoints/damaged");
    org.apache.hadoop.fs.FileUtil.copy(
        dfs.fileSystem(),
        dfs.path("/checkpoints/q"),
        dfs.fileSystem(),
        copy,
        false,
        dfs.fileSystem().getConf());
    org.apache.hadoop.fs.RemoteIterator<org.apache.hadoop.fs.LocatedFileStatus> files =
        dfs.fileSystem()
            .listFiles(new org.apache.hadoop.fs.Path(copy, "state/0/0/snapshot"), false);
    org.apache.hadoop.fs.Path snapshot = files.next().getPath();
    Damage.flipByte(dfs.fileSystem(), snapshot);

    Cli.Run run = Cli.run(CLIENT, "verify", copy.toString());

    assertThat(run.exit()).as(run.toString()).isEqualTo(1);
    assertThat(run.out())
        .contains("DAMAGED  " + snapshot)
        .contains("CRC32C mismatch")
        .contains("snapshot");
    System.out.println("verify of a damaged snapshot on HDFS:\n" + run.out());
  }

  /** repartition on HDFS: the query resumes on the new count with the model's output. */
  @Test
  void repartitionOnHdfs() throws Exception {
    Map<String, String> ours = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.OURS);
    String location = dfs.path("/checkpoints/repartition").toString();
    SparkQueries.DedupCount q = new SparkQueries.DedupCount(spark, location, "t_hdfs_repartition");
    q.start(ours).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(ours);

    Cli.Run run = Cli.run(CLIENT, "repartition", location, "--partitions", "3");

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out()).contains("rewritten into 3 partitions as batch 2");
    q.start(ours).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(ours);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(dfs.fileSystem().exists(dfs.path("/checkpoints/repartition/state/0/2"))).isTrue();
  }

  /**
   * repair on HDFS, on a copy of the journaled checkpoint (its journals closed: no live writer): a
   * torn changelog of a batch that never committed and a hedge copy of no entry; the dry run
   * changes nothing, --apply moves both into the backup and verify is clean after.
   */
  @Test
  void repairOnHdfs() throws Exception {
    org.apache.hadoop.fs.FileSystem fs = dfs.fileSystem();
    org.apache.hadoop.fs.Path copy = dfs.path("/checkpoints/repair");
    org.apache.hadoop.fs.FileUtil.copy(
        fs, dfs.path("/checkpoints/q"), fs, copy, false, fs.getConf());
    org.apache.hadoop.fs.Path torn =
        new org.apache.hadoop.fs.Path(
            copy, "state/1/1/changelog/00000000000000000005-0123456789abcdef.changelog");
    try (java.io.OutputStream out = fs.create(torn, false)) {
      out.write(new byte[] {'S', 'S', 'T', 'F', 2, 1});
    }
    long tenMinutesAgo = System.currentTimeMillis() - 600_000;
    fs.setTimes(torn, tenMinutesAgo, -1);
    org.apache.hadoop.fs.Path copyOfNone = new org.apache.hadoop.fs.Path(copy, "offsets/.9.hedge");
    try (java.io.OutputStream out = fs.create(copyOfNone, false)) {
      out.write(io.streamstate.core.format.HedgeCopyFile.encode("v1\n{}".getBytes()));
    }

    Cli.Run dry = Cli.run(CLIENT, "repair", copy.toString(), "--min-idle=0");
    assertThat(dry.exit()).as(dry.toString()).isZero();
    assertThat(dry.out())
        .contains("WOULD FIX " + torn)
        .contains("WOULD FIX " + copyOfNone)
        .contains("2 fixes planned");
    assertThat(fs.exists(torn)).isTrue();
    assertThat(fs.exists(copyOfNone)).isTrue();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(copy, "_streamstate_backup"))).isFalse();

    Cli.Run applied = Cli.run(CLIENT, "repair", copy.toString(), "--min-idle=0", "--apply");
    assertThat(applied.exit()).as(applied.toString()).isZero();
    assertThat(applied.out()).contains("moved    " + torn + " to ").contains("clean: checked");
    assertThat(fs.exists(torn)).isFalse();
    assertThat(fs.exists(copyOfNone)).isFalse();
    org.apache.hadoop.fs.FileStatus[] runs =
        fs.listStatus(new org.apache.hadoop.fs.Path(copy, "_streamstate_backup"));
    assertThat(runs).hasSize(1);
    assertThat(
            fs.getFileStatus(
                    new org.apache.hadoop.fs.Path(
                        runs[0].getPath(), "state/1/1/changelog/" + torn.getName()))
                .getLen())
        .isEqualTo(6);
    System.out.println("repair --apply on HDFS:\n" + applied.out());
  }
}
