package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.core.ProcessResources;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.hadoop.S3ProxyFixture;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code migrate} on checkpoints real queries wrote with our provider, our checkpoint file manager
 * and its log journal: local disk to local disk (the copy, a refused destination, a kill and the
 * rerun that completes it, a live query refused), and the acceptance test: a query stopped
 * on HDFS (MiniDFSCluster), migrated to S3 (S3Proxy) through a kill, resumed there, its output the
 * model's.
 */
class MigrateIT {
  static final Path work = SparkQueries.newWorkDir(MigrateIT.class);
  private static MiniDfsFixture dfs;
  private static S3ProxyFixture s3;
  private static SparkSession spark;

  /** Client settings for a one-DataNode cluster, and those that reach S3Proxy. */
  private static final Map<String, String> conf = new HashMap<>();

  private static final Map<String, String> OURS_JOURNALED =
      Map.of(
          SparkQueries.PROVIDER_CLASS, SparkQueries.OURS,
          SparkQueries.CFM_CLASS, SparkQueries.OUR_CFM,
          StreamStateConf.LOG_JOURNAL, "true");

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    s3 = S3ProxyFixture.start();
    conf.put("dfs.replication", "1");
    conf.put("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");
    conf.putAll(s3.sharedClientSettings());
    Map<String, String> extra = new HashMap<>();
    conf.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = SparkQueries.start("MigrateIT", work, extra);
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

  private static Cli.Run migrate(String from, String to) {
    return Cli.run(conf, "migrate", from, to);
  }

  /** {@code migrate} whose run stops after {@code files} files copied, the next one left torn. */
  private static Cli.Run migrateKilledAfter(int files, String from, String to) {
    java.util.List<String> args = new java.util.ArrayList<>(java.util.List.of("migrate", from, to));
    conf.forEach((k, v) -> args.add("--conf=" + k + "=" + v));
    return Cli.run(
        cl ->
            ((MigrateCommand) cl.getSubcommands().get("migrate").getCommand()).interruptAfterFiles =
                files,
        args.toArray(new String[0]));
  }

  @Test
  void copiesALocalCheckpointRefusesWhatIsNotOursAndResumesAfterAKill() throws Exception {
    Path source = work.resolve("local/q");
    SparkQueries.DedupCount query =
        new SparkQueries.DedupCount(spark, source.toString(), "t_migrate_local");
    query.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7);

    // A live query holds the journal: refused, nothing written at the destination.
    Cli.Run live = migrate(source.toString(), work.resolve("local/live").toString());
    assertThat(live.exit()).as(live.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(live.err()).contains("refused").contains("live writer");
    assertThat(work.resolve("local/live")).doesNotExist();

    query.batch(1, 8, 9);
    query.stop(OURS_JOURNALED);
    LogJournals.of(ProcessResources.shared()).close();
    Thread.sleep(1500); // a stopped query's maintenance may still upload a snapshot
    Map<String, byte[]> original = files(source);

    // A copy: every file with its bytes, journals included (local disk hosts them); clean.
    Path copy = work.resolve("local/copy");
    Cli.Run run = migrate(source.toString(), copy.toString());
    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("migrated " + source.toUri().toString().replaceAll("/$", ""))
        .contains(original.size() + " files")
        .contains(original.size() + " copied, 0 already there, 0 torn and replaced");
    assertThat(run.err()).contains("migrating: " + original.size() + "/" + original.size());
    assertSameFiles(copy, original);
    assertThat(files(source)).as("the source is unchanged").containsOnlyKeys(original.keySet());
    Cli.Run verify = Cli.run("verify", copy.toString());
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("4 of 4 stores recoverable at version 4");

    // A destination that is not empty, and not an unfinished migration of this source: refused.
    Cli.Run again = migrate(source.toString(), copy.toString());
    assertThat(again.exit()).as(again.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(again.err().strip())
        .startsWith("streamstate migrate: refused: ")
        .contains("is not empty")
        .doesNotContain("\n");
    assertSameFiles(copy, original);
    Cli.Run notACheckpoint =
        migrate(work.resolve("local").toString(), work.resolve("x").toString());
    assertThat(notACheckpoint.exit()).isEqualTo(ExitCodes.USAGE);

    // Killed after 7 files, the 8th torn; the destination is not clean; a rerun completes it.
    Path resumed = work.resolve("local/resumed");
    Cli.Run killed = migrateKilledAfter(7, source.toString(), resumed.toString());
    assertThat(killed.exit()).as(killed.toString()).isNotZero();
    assertThat(resumed.resolve(MigrationMarker.NAME)).exists();
    assertThat(files(resumed)).hasSize(9); // the marker, 7 files, a torn one
    Cli.Run incomplete = Cli.run("verify", resumed.toString());
    assertThat(incomplete.exit()).as(incomplete.toString()).isNotZero();
    assertThat(incomplete.out() + incomplete.err()).contains("migration that has not finished");
    Cli.Run other = migrate(copy.toString(), resumed.toString());
    assertThat(other.exit()).as(other.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(other.err()).contains("not ours to resume");

    Cli.Run rerun = migrate(source.toString(), resumed.toString());
    assertThat(rerun.exit()).as(rerun.toString()).isZero();
    assertThat(rerun.out())
        .contains(
            (original.size() - 8) + " copied, 7 already there (resumed), 1 torn and replaced");
    assertSameFiles(resumed, original);
    assertThat(Cli.run("verify", resumed.toString()).exit()).isZero();
  }

  /**
   * The acceptance test: a query stopped on HDFS, its logs in our log journal, migrated to
   * S3 (where our manager reads no journal: the entries are written out as files) through a kill
   * and a rerun, resumed there for more batches: its output is the model's.
   */
  @Test
  void aQueryStoppedOnHdfsResumesOnS3AfterAKilledAndResumedMigration() throws Exception {
    String source = dfs.path("/checkpoints/q").toString();
    String target = S3ProxyFixture.path("migrated/q").toString();
    SparkQueries.DedupCount query = new SparkQueries.DedupCount(spark, source, "t_migrate_s3");
    query.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    query.stop(OURS_JOURNALED);
    LogJournals.of(ProcessResources.shared()).close(); // the driver goes away
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
    Thread.sleep(1500);
    // This process still holds the stores' segment journals open: a live writer, refused.
    Cli.Run open = migrate(source, target);
    assertThat(open.exit()).as(open.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(open.err())
        .contains("refused: ")
        .contains(".journal")
        .contains("is open for writing");
    assertThat(s3.fileSystem().exists(S3ProxyFixture.path("migrated/q"))).isFalse();
    closeAsAtExit(dfs.path("/checkpoints/q"));
    Map<String, Long> before = listing(dfs.fileSystem(), dfs.path("/checkpoints/q"));

    Cli.Run killed = migrateKilledAfter(10, source, target);
    assertThat(killed.exit()).as(killed.toString()).isNotZero();
    Cli.Run run = migrate(source, target);
    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("offsets/: 4 entries only in the log journal written out as files")
        .contains("commits/: 4 entries only in the log journal written out as files")
        .contains("10 already there (resumed), 1 torn and replaced");
    System.out.println("migrate hdfs -> s3a, rerun after a kill:\n" + run.err() + run.out());
    assertThat(listing(dfs.fileSystem(), dfs.path("/checkpoints/q")))
        .as("the source is unchanged")
        .isEqualTo(before);
    Map<String, Long> copied = listing(s3.fileSystem(), S3ProxyFixture.path("migrated/q"));
    assertThat(copied).containsKeys("offsets/3", "commits/3", "metadata");
    assertThat(copied.keySet())
        .noneMatch(n -> n.contains(".journal-") || n.contains(MigrationMarker.NAME));
    Cli.Run verify = Cli.run(conf, "verify", target);
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

  private static Map<String, Long> listing(FileSystem fs, org.apache.hadoop.fs.Path root)
      throws IOException {
    Map<String, Long> files = new TreeMap<>();
    String prefix = root.toUri().getPath() + "/";
    RemoteIterator<LocatedFileStatus> it = fs.listFiles(root, true);
    while (it.hasNext()) {
      LocatedFileStatus f = it.next();
      files.put(f.getPath().toUri().getPath().substring(prefix.length()), f.getLen());
    }
    return files;
  }

  private static Map<String, byte[]> files(Path root) throws IOException {
    Map<String, byte[]> files = new TreeMap<>();
    try (Stream<Path> walk = Files.walk(root)) {
      for (Path p : (Iterable<Path>) walk.filter(Files::isRegularFile)::iterator) {
        try (InputStream in = Files.newInputStream(p)) {
          files.put(root.relativize(p).toString(), in.readAllBytes());
        }
      }
    }
    return files;
  }

  private static void assertSameFiles(Path copy, Map<String, byte[]> original) throws IOException {
    Map<String, byte[]> copied = files(copy);
    assertThat(copied).containsOnlyKeys(original.keySet());
    original.forEach((name, bytes) -> assertThat(copied.get(name)).as(name).isEqualTo(bytes));
  }
}
