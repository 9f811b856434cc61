package io.streamstate.cli;

import static io.streamstate.cli.Cli.list;
import static io.streamstate.cli.Cli.map;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.core.ProcessResources;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.hadoop.S3ProxyFixture;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command on a checkpoint on HDFS (an in-process MiniDFSCluster) that a real query wrote with
 * our provider, our checkpoint file manager and its log journal: inspect, verify, a damaged
 * snapshot, export-logs after which Spark's default manager (FileContext) resumes the query, and
 * migrate to S3 (an in-process S3Proxy) after which the query resumes there.
 */
class HdfsCheckpointIT {
  static final Path work = SparkQueries.newWorkDir(HdfsCheckpointIT.class);
  private static MiniDfsFixture dfs;
  private static S3ProxyFixture s3;
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
    s3 = S3ProxyFixture.start(); // where migrate copies a checkpoint to
    Map<String, String> extra = new HashMap<>();
    CLIENT.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    s3.sharedClientSettings().forEach((k, v) -> extra.put("spark.hadoop." + k, v));
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
  static void stop() throws Exception {
    if (spark != null) {
      spark.stop();
    }
    if (dfs != null) {
      dfs.close();
    }
    if (s3 != null) {
      s3.close();
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

    // dump reads the journaled logs through our manager: the model's rows, now and at version 2.
    for (long version : new long[] {4, 2}) {
      Cli.Run dump =
          Cli.run(
              CLIENT,
              "dump",
              checkpoint,
              "--operator",
              "0",
              "--partition",
              "1",
              "--version",
              String.valueOf(version));
      assertThat(dump.exit()).as(dump.toString()).isZero();
      assertThat(DumpModel.printed(dump.out()))
          .isNotEmpty()
          .containsExactlyEntriesOf(
              DumpModel.inPartition(
                  spark,
                  DumpModel.counts(DumpModel.sentUpTo(version)),
                  1,
                  SparkQueries.SHUFFLE_PARTITIONS));
    }

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

  /**
   * The acceptance test: a query stopped on HDFS, its logs in our log journal, migrated to
   * S3 (where our manager reads no journal: the entries are written out as files) through a kill
   * and a rerun, resumed there for more batches: its output is the model's.
   */
  @Test
  void aQueryStoppedOnHdfsResumesOnS3AfterAKilledAndResumedMigration() throws Exception {
    String source = dfs.path("/checkpoints/to-migrate").toString();
    String target = S3ProxyFixture.path("migrated/q").toString();
    SparkQueries.DedupCount query = new SparkQueries.DedupCount(spark, source, "t_migrate_s3");
    query.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    query.stop(OURS_JOURNALED);
    LogJournals.of(ProcessResources.shared()).close(); // the driver goes away
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
    Thread.sleep(1500);
    // This process still holds the stores' segment journals open: a live writer, refused.
    Cli.Run open = Cli.run(migrateConf(), "migrate", source, target);
    assertThat(open.exit()).as(open.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(open.err())
        .contains("refused: ")
        .contains(".journal")
        .contains("is open for writing");
    assertThat(s3.fileSystem().exists(S3ProxyFixture.path("migrated/q"))).isFalse();
    closeAsAtExit(dfs.path("/checkpoints/to-migrate"));
    Map<String, Long> before =
        Migrations.listing(dfs.fileSystem(), dfs.path("/checkpoints/to-migrate"));

    Cli.Run killed = Migrations.migrateKilledAfter(10, migrateConf(), source, target);
    assertThat(killed.exit()).as(killed.toString()).isNotZero();
    Cli.Run run = Cli.run(migrateConf(), "migrate", source, target);
    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("offsets/: 4 entries only in the log journal written out as files")
        .contains("commits/: 4 entries only in the log journal written out as files")
        .contains("10 already there (resumed), 1 torn and replaced");
    System.out.println("migrate hdfs -> s3a, rerun after a kill:\n" + run.err() + run.out());
    assertThat(Migrations.listing(dfs.fileSystem(), dfs.path("/checkpoints/to-migrate")))
        .as("the source is unchanged")
        .isEqualTo(before);
    Map<String, Long> copied =
        Migrations.listing(s3.fileSystem(), S3ProxyFixture.path("migrated/q"));
    assertThat(copied).containsKeys("offsets/3", "commits/3", "metadata");
    assertThat(copied.keySet())
        .noneMatch(n -> n.contains(".journal-") || n.contains(MigrationMarker.NAME));
    Cli.Run verify = Cli.run(migrateConf(), "verify", target);
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("batches 0-3 (files)").contains("4 of 4 stores recoverable");

    // The query resumes from S3 with our manager: its output is the uninterrupted model's.
    query.movedTo(target).start(OURS_JOURNALED).batch(10, 2, 11).batch(12, 13);
    query.stop(OURS_JOURNALED);
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
  }

  /** What the NameNode does once the driver and executors are gone: every open file closed. */
  private static void closeAsAtExit(org.apache.hadoop.fs.Path root) throws Exception {
    org.apache.hadoop.hdfs.DistributedFileSystem fs =
        (org.apache.hadoop.hdfs.DistributedFileSystem) dfs.fileSystem();
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
    while (it.hasNext()) {
      org.apache.hadoop.fs.Path p = it.next().getPath();
      while (!fs.isFileClosed(p) && !fs.recoverLease(p)) {
        Thread.sleep(100);
      }
    }
  }

  /** The cluster's client settings and S3Proxy's, for a migration from one to the other. */
  private static Map<String, String> migrateConf() {
    Map<String, String> conf = new HashMap<>(CLIENT);
    conf.putAll(s3.sharedClientSettings());
    return conf;
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
   * convert on HDFS: a query on Spark's HDFS-backed provider resumes on ours with the model's
   * output.
   */
  @Test
  void convertFromHdfsBackedToOursOnHdfs() throws Exception {
    Map<String, String> hdfsBacked = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.HDFS_BACKED);
    String location = dfs.path("/checkpoints/convert").toString();
    SparkQueries.DedupCount q = new SparkQueries.DedupCount(spark, location, "t_hdfs_convert");
    q.start(hdfsBacked).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(hdfsBacked);

    Cli.Run run = Cli.run(CLIENT, "convert", location, "--to", "streamstate");

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out()).contains("rewritten for " + SparkQueries.OURS + " as batch 2");
    q.start(hdfsBacked).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(hdfsBacked);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(dfs.fileSystem().exists(dfs.path("/checkpoints/convert/state/0/0/snapshot")))
        .as("our snapshots")
        .isTrue();
    assertThat(Cli.run(CLIENT, "inspect", location, "--json").json().get("providerClass"))
        .isEqualTo(SparkQueries.OURS);
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
