package io.streamstate.cli;

import static io.streamstate.cli.Cli.list;
import static io.streamstate.cli.Cli.map;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.cli.migrate.MigrationMarker;
import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command on checkpoints on local disk that real queries wrote (one Spark session for the
 * class): with our provider, our checkpoint file manager and its log journal; with our provider
 * writing a changelog file per commit; with Spark's HDFS-backed and RocksDB providers.
 */
class LocalCheckpointIT {
  static final Path work = SparkQueries.newWorkDir(LocalCheckpointIT.class);
  private static SparkSession spark;

  /** Ours, our manager, Spark's logs in a log journal; segment journals (the default). */
  private static Path journaled;

  /** Ours, a changelog file per commit (no group commit) and no snapshot. */
  private static Path changelogs;

  /** Ours under Spark's state checkpoint format v2 (the commit log names each store's commit). */
  private static Path formatV2;

  private static Path hdfsBacked;
  private static Path rocksdb;

  /** Like {@link #journaled}, its query kept to be resumed after export-logs. */
  private static Path toExport;

  private static SparkQueries.DedupCount exportQuery;

  static final Map<String, String> OURS_JOURNALED =
      Map.of(
          SparkQueries.PROVIDER_CLASS, SparkQueries.OURS,
          SparkQueries.CFM_CLASS, SparkQueries.OUR_CFM,
          StreamStateConf.LOG_JOURNAL, "true");

  @BeforeAll
  static void writeCheckpoints() throws Exception {
    spark = SparkQueries.start("LocalCheckpointIT", work, Map.of());
    journaled = run("journaled", OURS_JOURNALED);
    changelogs =
        run(
            "changelogs",
            Map.of(
                SparkQueries.PROVIDER_CLASS,
                SparkQueries.OURS,
                StreamStateConf.GROUP_COMMIT_ENABLED,
                "false",
                "spark.sql.streaming.stateStore.minDeltasForSnapshot",
                "100"));
    formatV2 =
        run(
            "format-v2",
            Map.of(
                SparkQueries.PROVIDER_CLASS,
                SparkQueries.OURS,
                "spark.sql.streaming.stateStore.checkpointFormatVersion",
                "2"));
    hdfsBacked = run("hdfs", Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.HDFS_BACKED));
    rocksdb = run("rocksdb", Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.ROCKSDB));
    toExport = work.resolve("export");
    exportQuery = new SparkQueries.DedupCount(spark, toExport.toUri().toString(), "t_export");
    exportQuery.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    exportQuery.stop(OURS_JOURNALED);
    assertThat(exportQuery.rows()).containsExactlyElementsOf(exportQuery.expectedRows());
    for (Path p : List.of(journaled, changelogs, formatV2, hdfsBacked, rocksdb, toExport)) {
      awaitQuiet(p);
    }
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  /** Four batches of the dedup-and-count query on a fresh checkpoint {@code name}. */
  private static Path run(String name, Map<String, String> confs) throws Exception {
    Path checkpoint = work.resolve(name);
    SparkQueries.DedupCount q =
        new SparkQueries.DedupCount(
            spark, checkpoint.toUri().toString(), "t_" + name.replace('-', '_'));
    q.start(confs).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    q.stop(confs);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    return checkpoint;
  }

  /**
   * Waits until the checkpoint's files stop changing for a second: a stopped query's maintenance
   * may still be uploading a snapshot.
   */
  static void awaitQuiet(Path checkpoint) {
    AtomicReference<String> last = new AtomicReference<>("");
    await()
        .atMost(Duration.ofSeconds(30))
        .pollDelay(Duration.ofMillis(500))
        .pollInterval(Duration.ofMillis(500))
        .until(
            () -> {
              String now = listing(checkpoint);
              boolean quiet = now.equals(last.get());
              last.set(now);
              return quiet;
            });
  }

  private static String listing(Path dir) throws IOException {
    StringBuilder sb = new StringBuilder();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.sorted().toList()) {
        sb.append(p).append(' ').append(Files.isRegularFile(p) ? Files.size(p) : -1).append('\n');
      }
    }
    return sb.toString();
  }

  @Test
  void inspectJsonReportsWhatTheQueryWrote() {
    Cli.Run run = Cli.run("inspect", journaled.toString(), "--json");

    assertThat(run.exit()).as(run.toString()).isZero();
    Map<String, Object> r = run.json();
    assertThat(r.get("format")).isEqualTo(1L);
    assertThat(r.get("queryId")).asString().hasSize(36);
    assertThat(r.get("lastBatch")).isEqualTo(3L);
    assertThat(r.get("lastCommittedBatch")).isEqualTo(3L);
    assertThat(r.get("recoveryVersion")).isEqualTo(4L);
    assertThat(r.get("providerClass")).isEqualTo(SparkQueries.OURS);
    assertThat(r.get("shufflePartitions")).isEqualTo(2L);
    assertThat(r.get("checkpointFormatVersion")).isEqualTo("1");
    for (String log : List.of("offsets", "commits")) {
      Map<String, Object> l = map(r.get(log));
      assertThat(l.get("layout")).as(log).isEqualTo("journal");
      assertThat(l.get("entries")).as(log).isEqualTo(4L);
      assertThat(l.get("first")).as(log).isEqualTo(0L);
      assertThat(l.get("last")).as(log).isEqualTo(3L);
      assertThat(l.get("problems")).as(log).asList().isEmpty();
    }
    List<Map<String, Object>> operators = list(r.get("operators"));
    assertThat(operators).hasSize(2);
    assertThat(operators)
        .extracting(o -> o.get("name"))
        .containsExactlyInAnyOrder("stateStoreSave", "dedupe");
    for (Map<String, Object> op : operators) {
      assertThat(op.get("partitions")).asList().containsExactly(0L, 1L);
      assertThat(op.get("storeNames")).asList().containsExactly("default");
      assertThat(list(op.get("schemaFiles")))
          .isNotEmpty()
          .allMatch(s -> s.get("keySchema") != null);
      List<Map<String, Object>> stores = list(op.get("stores"));
      assertThat(stores).hasSize(2);
      for (Map<String, Object> s : stores) {
        assertThat(s.get("provider")).isEqualTo("streamstate");
        assertThat(s.get("newestVersion")).isEqualTo(4L);
        assertThat(s.get("recoveryVersion")).isEqualTo(4L);
        assertThat(s.get("recoverable")).isEqualTo(true);
        assertThat(s.get("oldestRecoverableVersion")).isEqualTo(0L);
        Map<String, Object> files = map(s.get("files"));
        // Group commit appends every commit to a segment journal: four versions, four members.
        assertThat(map(files.get("journalMembers")).get("count")).isEqualTo(4L);
        assertThat(map(files.get("changelogs")).get("count")).isEqualTo(0L);
      }
    }
    assertThat(map(r.get("segments")).get("journals"))
        .asInstanceOf(org.assertj.core.api.InstanceOfAssertFactories.LONG)
        .isPositive();
  }

  @Test
  void inspectShowsTheSameToPeople() {
    Cli.Run run = Cli.run("inspect", journaled.toString());

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("4 entries, batches 0-3, in a log journal")
        .contains("last planned 3, last committed 3")
        .contains(SparkQueries.OURS)
        .contains("operator 0 (stateStoreSave): 2 partitions, stores default")
        .contains("operator 1 (dedupe): 2 partitions, stores default")
        .contains("key: value integer");
    System.out.println("inspect of a journaled checkpoint:\n" + run.out());
  }

  @Test
  void inspectReportsSparksOwnProvidersByName() {
    Map<String, Object> hdfs = Cli.run("inspect", hdfsBacked.toString(), "--json").json();
    Map<String, Object> rocks = Cli.run("inspect", rocksdb.toString(), "--json").json();

    assertThat(hdfs.get("providerClass")).isEqualTo(SparkQueries.HDFS_BACKED);
    assertThat(map(hdfs.get("offsets")).get("layout")).isEqualTo("files");
    for (Map<String, Object> op : list(hdfs.get("operators"))) {
      for (Map<String, Object> s : list(op.get("stores"))) {
        assertThat(s.get("provider")).isEqualTo("hdfs");
        assertThat(s.get("newestVersion")).isEqualTo(4L);
        assertThat(s.get("recoverable")).isEqualTo(true);
        assertThat(map(map(s.get("files")).get("deltas")).get("count")).isEqualTo(4L);
      }
    }
    assertThat(rocks.get("providerClass")).isEqualTo(SparkQueries.ROCKSDB);
    for (Map<String, Object> op : list(rocks.get("operators"))) {
      for (Map<String, Object> s : list(op.get("stores"))) {
        assertThat(s.get("provider")).isEqualTo("rocksdb");
        assertThat(s.get("newestVersion")).isEqualTo(4L);
        assertThat(s.get("recoverable")).isEqualTo(true);
        // Zips come from maintenance, which a short query may stop before: not asserted.
        assertThat(map(map(s.get("files")).get("changelogs")).get("count")).isEqualTo(4L);
      }
    }
  }

  @Test
  void verifyIsCleanOnTheCheckpointsOfEveryProvider() {
    for (Path checkpoint : List.of(journaled, changelogs, formatV2, hdfsBacked, rocksdb)) {
      Cli.Run run = Cli.run("verify", checkpoint.toString());
      assertThat(run.exit()).as(run.toString()).isZero();
      assertThat(run.out()).contains("clean: checked").contains("4 of 4 stores recoverable");
    }
    System.out.println(
        "verify of a clean checkpoint:\n" + Cli.run("verify", changelogs.toString()).out());
  }

  @Test
  void underCheckpointFormatV2TheCommitsTheCommitLogNamesAreChecked() {
    Map<String, Object> r = Cli.run("inspect", formatV2.toString(), "--json").json();

    assertThat(r.get("checkpointFormatVersion")).isEqualTo("2");
    for (Map<String, Object> op : list(r.get("operators"))) {
      for (Map<String, Object> s : list(op.get("stores"))) {
        assertThat(s.get("recoverable")).isEqualTo(true);
      }
    }
    Cli.Run verify = Cli.run("verify", formatV2.toString());
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(Cli.run("inspect", formatV2.toString()).out())
        .contains("checkpoint format   2 (as the commit log is written)");
  }

  @Test
  void verifyNamesAChangelogTheLineageNeedsWhoseByteFlipped() throws IOException {
    Path copy = Damage.copy(changelogs, work.resolve("flipped"));
    Path target;
    try (Stream<Path> files = Files.list(copy.resolve("state/1/1/changelog"))) {
      target =
          files
              .filter(p -> p.getFileName().toString().startsWith("00000000000000000002-"))
              .findFirst()
              .orElseThrow();
    }
    Damage.flipByte(target);

    Cli.Run run = Cli.run("verify", copy.toString());

    assertThat(run.exit()).as(run.toString()).isEqualTo(1);
    assertThat(run.out())
        .contains("DAMAGED  " + target.toUri())
        .contains("CRC32C mismatch")
        .contains("needed by the lineage of version 4 (which a restart loads): recovery fails")
        .contains("FAILS    state/1/1: Cannot load version 4 of store state/1/1")
        .contains("3 of 4 stores recoverable");
    System.out.println("verify after a flipped byte:\n" + run.out());
  }

  @Test
  void verifyTellsATornChangelogNoRestartReadsFromOneItNeeds() throws IOException {
    Path copy = Damage.copy(changelogs, work.resolve("torn-newest"));
    // A batch 4 that never committed: its task died while writing version 5.
    Path torn = copy.resolve("state/0/0/changelog/00000000000000000005-0123456789abcdef.changelog");
    Files.write(torn, new byte[] {'S', 'S', 'T', 'F', 2, 1});

    Cli.Run run = Cli.run("verify", copy.toString());

    assertThat(run.exit()).as(run.toString()).isEqualTo(1);
    assertThat(run.out())
        .contains(torn.getFileName().toString())
        .contains("torn or truncated write")
        .contains("newer than version 4, which a restart loads")
        .contains("treats it as absent")
        .contains("4 of 4 stores recoverable");
  }

  @Test
  void verifyNamesATruncatedOffsetEntry() throws IOException {
    Path copy = Damage.copy(hdfsBacked, work.resolve("truncated-offset"));
    Path three = copy.resolve("offsets/3");
    Damage.truncate(three);
    Files.deleteIfExists(copy.resolve("offsets/.3.crc"));

    Cli.Run run = Cli.run("verify", copy.toString());

    assertThat(run.exit()).as(run.toString()).isEqualTo(1);
    assertThat(run.out())
        .contains("DAMAGED  file://" + three)
        .contains("batch 3 is torn or unparseable")
        .contains("sets it aside when the query restarts");
    System.out.println("verify after a truncated offset entry:\n" + run.out());
  }

  @Test
  void exportLogsRefusesALiveWriterThenLetsSparksOwnManagerResume() throws Exception {
    // While a query with the journal runs, the journal is held: refused, nothing written.
    exportQuery.start(OURS_JOURNALED).batch(10, 11);
    Cli.Run live = Cli.run("export-logs", toExport.toString());
    Cli.Run liveMigrate = Cli.run("migrate", toExport.toString(), work.resolve("live").toString());
    // repair refuses it too, by the journal's lock alone (the logs' age not checked).
    Cli.Run liveRepair = Cli.run("repair", toExport.toString(), "--min-idle=0", "--apply");
    exportQuery.stop(OURS_JOURNALED);
    assertThat(liveRepair.exit()).as(liveRepair.toString()).isEqualTo(1);
    assertThat(liveRepair.err().strip())
        .startsWith("streamstate repair: refused: the log journal " + toExport.toUri())
        .contains("is held by a live writer");
    assertThat(liveRepair.out()).isEmpty();
    // The driver goes away: its journals are closed (and their locks dropped), as at its exit.
    LogJournals.of(ProcessResources.shared()).close();
    assertThat(live.exit()).as(live.toString()).isEqualTo(1);
    assertThat(live.err()).contains("refused").contains("live writer");
    assertThat(toExport.resolve("offsets/0")).doesNotExist();
    assertThat(liveMigrate.exit()).as(liveMigrate.toString()).isEqualTo(1);
    assertThat(liveMigrate.err()).contains("refused").contains("live writer");
    assertThat(work.resolve("live")).doesNotExist();
    awaitQuiet(toExport);

    Cli.Run dry = Cli.run("export-logs", toExport.toString(), "--dry-run");
    assertThat(dry.exit()).as(dry.toString()).isZero();
    assertThat(dry.out()).contains("would write 5 entries from the journal (batches 0-4)");
    assertThat(toExport.resolve("offsets/0")).doesNotExist();

    Cli.Run export = Cli.run("export-logs", toExport.toString());
    assertThat(export.exit()).as(export.toString()).isZero();
    assertThat(export.out())
        .contains("offsets: wrote 5 entries from the journal (batches 0-4)")
        .contains("commits: wrote 5 entries from the journal (batches 0-4)")
        .contains("deleted " + toExport.resolve("offsets").toUri() + ".journal-");
    System.out.println("export-logs:\n" + export.out());
    for (int b = 0; b <= 4; b++) {
      assertThat(toExport.resolve("offsets/" + b)).isRegularFile();
      assertThat(toExport.resolve("commits/" + b)).isRegularFile();
    }
    try (Stream<Path> left = Files.list(toExport.resolve("offsets"))) {
      assertThat(left.map(p -> p.getFileName().toString()))
          .noneMatch(n -> n.startsWith(".journal"));
    }

    // Spark's own checkpoint file manager (the session's) resumes from the plain files.
    Map<String, String> plain = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.OURS);
    exportQuery.start(plain).batch(12, 2, 13).batch(14);
    exportQuery.stop(plain);
    assertThat(exportQuery.rows()).containsExactlyElementsOf(exportQuery.expectedRows());
    awaitQuiet(toExport);

    Map<String, Object> after = Cli.run("inspect", toExport.toString(), "--json").json();
    assertThat(map(after.get("offsets")).get("layout")).isEqualTo("files");
    assertThat(after.get("lastCommittedBatch")).isEqualTo(6L);
    assertThat(Cli.run("verify", toExport.toString()).exit()).isZero();
  }

  /**
   * migrate local disk to local disk: every file with its bytes (journals too: local disk hosts
   * them), clean; a destination not empty refused; a kill leaves a torn file and an incomplete
   * destination, a rerun completes it. (A live query refused: in the export-logs test.)
   */
  @Test
  void migrateCopiesRefusesWhatIsNotOursAndResumesAfterAKill() throws Exception {
    // The driver goes away: its log journals are closed (and their locks dropped), as at exit.
    LogJournals.of(ProcessResources.shared()).close();
    Path source = journaled;
    Map<String, byte[]> original = Migrations.files(source);

    // A copy: every file with its bytes, journals included (local disk hosts them); clean.
    Path copy = work.resolve("migrate/copy");
    Cli.Run run = Cli.run("migrate", source.toString(), copy.toString());
    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("migrated " + source.toUri().toString().replaceAll("/$", ""))
        .contains(original.size() + " files")
        .contains(original.size() + " copied, 0 already there, 0 torn and replaced");
    assertThat(run.err()).contains("migrating: " + original.size() + "/" + original.size());
    Migrations.assertSameFiles(copy, original);
    assertThat(Migrations.files(source))
        .as("the source is unchanged")
        .containsOnlyKeys(original.keySet());
    Cli.Run verify = Cli.run("verify", copy.toString());
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("4 of 4 stores recoverable at version 4");

    // A destination that is not empty, and not an unfinished migration of this source: refused.
    Cli.Run again = Cli.run("migrate", source.toString(), copy.toString());
    assertThat(again.exit()).as(again.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(again.err().strip())
        .startsWith("streamstate migrate: refused: ")
        .contains("is not empty")
        .doesNotContain("\n");
    Migrations.assertSameFiles(copy, original);
    Cli.Run notACheckpoint =
        Cli.run("migrate", work.resolve("migrate").toString(), work.resolve("x").toString());
    assertThat(notACheckpoint.exit()).isEqualTo(ExitCodes.USAGE);

    // Killed after 7 files, the 8th torn; the destination is not clean; a rerun completes it.
    Path resumed = work.resolve("migrate/resumed");
    Cli.Run killed =
        Migrations.migrateKilledAfter(7, Map.of(), source.toString(), resumed.toString());
    assertThat(killed.exit()).as(killed.toString()).isNotZero();
    assertThat(resumed.resolve(MigrationMarker.NAME)).exists();
    assertThat(Migrations.files(resumed)).hasSize(9); // the marker, 7 files, a torn one
    Cli.Run incomplete = Cli.run("verify", resumed.toString());
    assertThat(incomplete.exit()).as(incomplete.toString()).isNotZero();
    assertThat(incomplete.out() + incomplete.err()).contains("migration that has not finished");
    Cli.Run other = Cli.run("migrate", copy.toString(), resumed.toString());
    assertThat(other.exit()).as(other.toString()).isEqualTo(ExitCodes.DAMAGED);
    assertThat(other.err()).contains("not ours to resume");

    Cli.Run rerun = Cli.run("migrate", source.toString(), resumed.toString());
    assertThat(rerun.exit()).as(rerun.toString()).isZero();
    assertThat(rerun.out())
        .contains(
            (original.size() - 8) + " copied, 7 already there (resumed), 1 torn and replaced");
    Migrations.assertSameFiles(resumed, original);
    assertThat(Cli.run("verify", resumed.toString()).exit()).isZero();
    System.out.println(
        "migrate:\n"
            + run.err()
            + run.out()
            + again.err()
            + incomplete.out()
            + rerun.err()
            + rerun.out());
  }

  /**
   * repartition on a checkpoint of ours (formats 1 and 2, the format read from its commit log): the
   * query resumes on the new count and its output is the model's; a checkpoint of Spark's
   * HDFS-backed provider is refused with nothing written.
   */
  @Test
  void repartitionRewritesOurStateAndTheQueryResumesOnTheNewCount() throws Exception {
    for (String format : List.of("1", "2")) {
      Map<String, String> confs =
          Map.of(
              SparkQueries.PROVIDER_CLASS,
              SparkQueries.OURS,
              "spark.sql.streaming.stateStore.checkpointFormatVersion",
              format);
      Path checkpoint = work.resolve("repartition-v" + format);
      SparkQueries.DedupCount q =
          new SparkQueries.DedupCount(
              spark, checkpoint.toUri().toString(), "t_repartition_v" + format);
      q.start(confs).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
      q.stop(confs);

      Cli.Run run = Cli.run("repartition", checkpoint.toString(), "--partitions", "5");

      assertThat(run.exit()).as(run.toString()).isZero();
      assertThat(run.out())
          .contains("state of batch 1 rewritten into 5 partitions as batch 2")
          .contains("checkpoint format " + format);
      assertThat(Files.readString(checkpoint.resolve("offsets/2")))
          .contains("\"spark.sql.shuffle.partitions\":\"5\"");
      q.start(confs).batch(8, 1, 9).batch(10, 11, 12, 2);
      q.stop(confs);
      assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
      assertThat(checkpoint.resolve("state/0/4")).as("a partition of the run on 5").isDirectory();
    }

    String before = listing(hdfsBacked.resolve("offsets"));
    Cli.Run refused = Cli.run("repartition", hdfsBacked.toString(), "--partitions", "5");
    assertThat(refused.exit()).as(refused.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(refused.err())
        .contains("HDFSBackedStateStoreProvider")
        .contains("Spark's own runner");
    assertThat(listing(hdfsBacked.resolve("offsets"))).as("nothing written").isEqualTo(before);
  }

  /**
   * convert: a query on Spark's HDFS-backed provider moves to Spark's RocksDB provider, then to
   * ours, and resumes; its output is the model's; inspect names the provider the last batch pinned
   * and verify finds it recoverable. The HDFS-backed target is refused with nothing written, and so
   * is the provider the checkpoint already runs.
   */
  @Test
  void convertMovesAQueryFromHdfsBackedThroughRocksDbToOurs() throws Exception {
    Path checkpoint = work.resolve("convert");
    SparkQueries.DedupCount q =
        new SparkQueries.DedupCount(spark, checkpoint.toUri().toString(), "t_convert");
    Map<String, String> hdfs = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.HDFS_BACKED);
    q.start(hdfs).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(hdfs);

    String before = listing(checkpoint);
    Cli.Run toHdfs = Cli.run("convert", checkpoint.toString(), "--to", "hdfs");
    assertThat(toHdfs.exit()).as(toHdfs.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(toHdfs.err()).contains("loadEmpty").doesNotContain("\tat ");
    assertThat(listing(checkpoint)).as("nothing written by a refusal").isEqualTo(before);

    Cli.Run toRocksDb = Cli.run("convert", checkpoint.toString(), "--to", "rocksdb");
    assertThat(toRocksDb.exit()).as(toRocksDb.toString()).isZero();
    assertThat(toRocksDb.out())
        .contains("state of batch 1 (" + SparkQueries.HDFS_BACKED + ", 2 partitions)")
        .contains("rewritten for " + SparkQueries.ROCKSDB + " as batch 2");
    Cli.Run again = Cli.run("convert", checkpoint.toString(), "--to", "rocksdb");
    assertThat(again.exit()).as(again.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(again.err()).contains("already runs on " + SparkQueries.ROCKSDB);

    Cli.Run toOurs = Cli.run("convert", checkpoint.toString(), "--to", "streamstate");
    assertThat(toOurs.exit()).as(toOurs.toString()).isZero();
    assertThat(toOurs.out())
        .contains("state of batch 2 (" + SparkQueries.ROCKSDB + ", 2 partitions)")
        .contains("rewritten for " + SparkQueries.OURS + " as batch 3");
    // The session's provider conf does not matter: Spark takes the one the offset log pins.
    q.start(hdfs).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(hdfs);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    Map<String, Object> inspected = Cli.run("inspect", checkpoint.toString(), "--json").json();
    assertThat(inspected.get("providerClass")).isEqualTo(SparkQueries.OURS);
    assertThat(Cli.run("verify", checkpoint.toString()).exit()).isZero();
  }

  /**
   * convert and repartition on a checkpoint whose logs are in our log journal, which Spark's own
   * manager does not read: the command's session reads and writes them through ours, and the query
   * resumes (journal on) with the model's output.
   */
  @Test
  void convertAndRepartitionReadAJournaledCheckpointThroughOurManager() throws Exception {
    Path checkpoint = work.resolve("convert-journaled");
    SparkQueries.DedupCount q =
        new SparkQueries.DedupCount(spark, checkpoint.toUri().toString(), "t_convert_journaled");
    q.start(OURS_JOURNALED).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(OURS_JOURNALED);
    LogJournals.of(ProcessResources.shared()).close(); // as at the driver's exit
    assertThat(map(Cli.run("inspect", checkpoint.toString(), "--json").json().get("offsets")))
        .containsEntry("layout", "journal");

    Cli.Run repartition = Cli.run("repartition", checkpoint.toString(), "--partitions", "3");
    assertThat(repartition.exit()).as(repartition.toString()).isZero();
    assertThat(repartition.out())
        .contains("state of batch 1 rewritten into 3 partitions as batch 2");
    Cli.Run convert = Cli.run("convert", checkpoint.toString(), "--to", "rocksdb");
    assertThat(convert.exit()).as(convert.toString()).isZero();
    assertThat(convert.out())
        .contains("state of batch 2 (" + SparkQueries.OURS + ", 3 partitions)");

    q.start(OURS_JOURNALED).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(OURS_JOURNALED);
    LogJournals.of(ProcessResources.shared()).close();
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(Cli.run("inspect", checkpoint.toString(), "--json").json().get("providerClass"))
        .isEqualTo(SparkQueries.ROCKSDB);
  }

  /**
   * convert --out: the checkpoint is copied (migrate) and the copy converted; the original is not
   * written, and the query resumes from the copy on ours with the model's output. A target it
   * cannot write is refused before anything is copied.
   */
  @Test
  void convertOutConvertsAVerifiedCopyAndLeavesTheOriginal() throws Exception {
    Path original = work.resolve("convert-out-original");
    Path copy = work.resolve("convert-out-copy");
    SparkQueries.DedupCount q =
        new SparkQueries.DedupCount(spark, original.toUri().toString(), "t_convert_out");
    Map<String, String> hdfs = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.HDFS_BACKED);
    q.start(hdfs).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(hdfs);
    String before = listing(original);

    Cli.Run refused =
        Cli.run("convert", original.toString(), "--to", "hdfs", "--out", copy.toString());
    assertThat(refused.exit()).as(refused.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(copy).as("nothing copied for a refused target").doesNotExist();

    Cli.Run run =
        Cli.run("convert", original.toString(), "--to", "streamstate", "--out", copy.toString());

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out())
        .contains("migrated ")
        .contains("rewritten for " + SparkQueries.OURS + " as batch 2");
    assertThat(listing(original)).as("the original is not written").isEqualTo(before);
    q.movedTo(copy.toUri().toString()).start(hdfs).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(hdfs);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(Cli.run("inspect", copy.toString(), "--json").json().get("providerClass"))
        .isEqualTo(SparkQueries.OURS);
  }

  /**
   * dump on the checkpoint of every provider: a partition of the count (operator 0) at the version
   * a restart loads, the other at an older version, and a partition of the dedup (operator 1) hold
   * exactly the rows of the plain-Java model, sorted by key.
   */
  @Test
  void dumpPrintsTheModelsRowsForEveryProvider() {
    record Read(long operator, int partition, long version) {}
    List<Read> reads = List.of(new Read(0, 0, 4), new Read(0, 1, 2), new Read(1, 1, 4));
    for (Path checkpoint : List.of(journaled, changelogs, formatV2, hdfsBacked, rocksdb)) {
      for (Read read : reads) {
        List<String> args =
            new java.util.ArrayList<>(
                List.of(
                    "dump",
                    checkpoint.toString(),
                    "--operator",
                    String.valueOf(read.operator()),
                    "--partition",
                    String.valueOf(read.partition())));
        if (read.version() != 4) {
          args.addAll(List.of("--version", String.valueOf(read.version())));
        }
        Map<Long, Long> state =
            read.operator() == 0
                ? DumpModel.counts(DumpModel.sentUpTo(read.version()))
                : DumpModel.distinct(DumpModel.sentUpTo(read.version()));

        Cli.Run run = Cli.run(args.toArray(new String[0]));

        assertThat(run.exit()).as(run.toString()).isZero();
        assertThat(DumpModel.printed(run.out()))
            .as("%s %s", checkpoint, read)
            .isNotEmpty()
            .containsExactlyEntriesOf(
                DumpModel.inPartition(
                    spark, state, read.partition(), SparkQueries.SHUFFLE_PARTITIONS));
      }
    }
    System.out.println(
        "dump:\n"
            + Cli.run("dump", journaled.toString(), "--operator", "0", "--partition", "1").out()
            + Cli.run(
                    "dump",
                    journaled.toString(),
                    "--operator",
                    "1",
                    "--partition",
                    "1",
                    "--limit",
                    "3")
                .out()
            + Cli.run(
                    "dump",
                    journaled.toString(),
                    "--operator",
                    "0",
                    "--partition",
                    "1",
                    "--version",
                    "9")
                .err());
  }

  /** --limit keeps the first rows by key; --key-prefix the rows whose first key field matches. */
  @Test
  void dumpLimitsAndFiltersByKeyPrefix() {
    Map<Long, Long> distinct = DumpModel.distinct(DumpModel.sentUpTo(4));
    Map<Long, Long> partition0 =
        DumpModel.inPartition(spark, distinct, 0, SparkQueries.SHUFFLE_PARTITIONS);
    assertThat(partition0).hasSizeGreaterThan(2);
    String cp = changelogs.toString();

    Cli.Run limited = Cli.run("dump", cp, "--operator", "1", "--partition", "0", "--limit", "2");
    assertThat(limited.exit()).as(limited.toString()).isZero();
    assertThat(DumpModel.printed(limited.out()).keySet())
        .containsExactlyElementsOf(partition0.keySet().stream().limit(2).toList());

    long first = partition0.keySet().iterator().next();
    Cli.Run prefixed =
        Cli.run(
            "dump",
            cp,
            "--operator",
            "1",
            "--partition",
            "0",
            "--key-prefix",
            String.valueOf(first));
    assertThat(prefixed.exit()).as(prefixed.toString()).isZero();
    assertThat(DumpModel.printed(prefixed.out()).keySet()).containsExactly(first);

    Cli.Run none = Cli.run("dump", cp, "--operator", "1", "--partition", "0", "--key-prefix", "x");
    assertThat(none.exit()).as(none.toString()).isZero();
    assertThat(none.out()).isEmpty();
  }

  /** A wrong operator, partition, store or version: one line naming what there is, exit 2. */
  @Test
  void dumpRefusesWhatTheCheckpointDoesNotHold() {
    String cp = rocksdb.toString();
    String uri = rocksdb.toUri().toString();
    String where = uri.endsWith("/") ? uri.substring(0, uri.length() - 1) : uri;
    Map<List<String>, String> cases = new java.util.LinkedHashMap<>();
    cases.put(
        List.of("--operator", "7", "--partition", "0"),
        where + " has no stateful operator 7; its operators: 0, 1");
    cases.put(
        List.of("--operator", "0", "--partition", "2"),
        "operator 0 of " + where + " has 2 partitions (0-1): no partition 2");
    cases.put(
        List.of("--operator", "0", "--partition", "0", "--store", "left-keyToNumValues"),
        "operator 0 of " + where + " has no store 'left-keyToNumValues'; its stores: default");
    cases.put(
        List.of("--operator", "0", "--partition", "1", "--version", "5"),
        "Cannot dump version 5 of state/0/1 in "
            + where
            + ": the checkpoint keeps versions 1-4 of it");
    cases.put(
        List.of("--operator", "0", "--partition", "1", "--version", "0"),
        "the checkpoint keeps versions 1-4 of it");
    cases.forEach(
        (options, message) -> {
          List<String> args = new java.util.ArrayList<>(List.of("dump", cp));
          args.addAll(options);
          Cli.Run run = Cli.run(args.toArray(new String[0]));
          assertThat(run.exit()).as(run.toString()).isEqualTo(ExitCodes.USAGE);
          assertThat(run.out()).isEmpty();
          assertThat(run.err()).startsWith("streamstate dump: ").contains(message);
          assertThat(run.err().strip()).doesNotContain("\n");
        });
  }

  /**
   * verify --deep rebuilds each of our stores at the version a restart loads and finds the row
   * counts our provider recorded; the rows rebuilt per operator are the model's (3 keys of the
   * count, 9 distinct values); Spark's providers' stores are named as not rebuilt.
   */
  @Test
  void verifyDeepRebuildsOurStoresWithTheRecordedCounts() {
    java.util.regex.Pattern line =
        java.util.regex.Pattern.compile(
            "deep: state/(\\d+)/(\\d+) version 4 rebuilt: (\\d+) rows? \\(default: \\3\\), as its"
                + " provider recorded");
    for (Path checkpoint : List.of(journaled, changelogs, formatV2)) {
      Cli.Run run = Cli.run("verify", checkpoint.toString(), "--deep");

      assertThat(run.exit()).as(run.toString()).isZero();
      long[] rows = new long[2];
      int stores = 0;
      for (String l : run.out().split("\n")) {
        java.util.regex.Matcher m = line.matcher(l);
        if (m.matches()) {
          rows[Integer.parseInt(m.group(1))] += Long.parseLong(m.group(3));
          stores++;
        }
      }
      assertThat(stores).as(run.toString()).isEqualTo(4);
      assertThat(rows).as(run.toString()).containsExactly(3, 9);
    }
    Cli.Run hdfs = Cli.run("verify", hdfsBacked.toString(), "--deep");
    assertThat(hdfs.exit()).as(hdfs.toString()).isZero();
    assertThat(hdfs.out()).contains("deep: state/0/0 (hdfs): not rebuilt");
    System.out.println(
        "verify --deep:\n" + Cli.run("verify", changelogs.toString(), "--deep").out());
  }

  /**
   * dump through bin/streamstate, in a process and a Spark session of its own (local[1], no query
   * ever run in it): Spark's HDFS-backed provider's rows are the model's, standard error is empty.
   */
  @Test
  void dumpRunsThroughTheLauncherInASparkSessionOfItsOwn() throws Exception {
    LauncherIT.Result run =
        LauncherIT.launch(
            work,
            Map.of("SPARK_HOME", LauncherIT.sparkHome(work).toString()),
            "dump",
            hdfsBacked.toString(),
            "--operator",
            "1",
            "--partition",
            "0",
            "--version",
            "3");

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.err()).as(run.toString()).isEmpty();
    assertThat(DumpModel.printed(run.out()))
        .isNotEmpty()
        .containsExactlyEntriesOf(
            DumpModel.inPartition(
                spark,
                DumpModel.distinct(DumpModel.sentUpTo(3)),
                0,
                SparkQueries.SHUFFLE_PARTITIONS));
  }

  /** Every file under {@code dir} with its bytes (a hash), to tell that nothing changed. */
  private static String contents(Path dir) throws IOException {
    StringBuilder sb = new StringBuilder();
    try (Stream<Path> files = Files.walk(dir)) {
      for (Path p : files.filter(Files::isRegularFile).sorted().toList()) {
        sb.append(dir.relativize(p))
            .append(' ')
            .append(Arrays.hashCode(Files.readAllBytes(p)))
            .append('\n');
      }
    }
    return sb.toString();
  }

  /**
   * A query stopped by a crash in batch 3 (its offset entry torn, a changelog of the version it was
   * writing torn), plus hedge copies nobody needs: the dry run lists every fix and changes nothing;
   * --apply moves the torn files into the backup, deletes the copies, verifies clean, and the query
   * resumes with Spark's own manager to the model's output.
   */
  @Test
  void repairMovesATornLastOffsetEntryAwayAndTheQueryResumesWithSparksManager() throws Exception {
    Map<String, String> confs =
        Map.of(
            SparkQueries.PROVIDER_CLASS,
            SparkQueries.OURS,
            StreamStateConf.GROUP_COMMIT_ENABLED,
            "false");
    Path cp = work.resolve("repair");
    SparkQueries.DedupCount q =
        new SparkQueries.DedupCount(spark, cp.toUri().toString(), "t_repair");
    q.start(confs).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7);
    q.stop(confs);
    awaitQuiet(cp);
    // The crash: offsets/3 half written, a changelog of version 4 (batch 3's) torn.
    byte[] two = Files.readAllBytes(cp.resolve("offsets/2"));
    Path torn = cp.resolve("offsets/3");
    Files.write(torn, Arrays.copyOf(two, two.length / 2));
    Path tornChangelog =
        cp.resolve("state/1/0/changelog/00000000000000000004-0123456789abcdef.changelog");
    Files.write(tornChangelog, new byte[] {'S', 'S', 'T', 'F', 2, 1});
    // A hedge copy with its entry's bytes, and a torn one.
    Path sameCopy = cp.resolve("offsets/" + HedgeCopyFile.nameOf("2"));
    Files.write(sameCopy, HedgeCopyFile.encode(two));
    byte[] commit1 = HedgeCopyFile.encode(Files.readAllBytes(cp.resolve("commits/1")));
    Path tornCopy = cp.resolve("commits/" + HedgeCopyFile.nameOf("1"));
    Files.write(tornCopy, Arrays.copyOf(commit1, commit1.length - 5));

    // Just written: the changelog is within the grace period, and the logs are not idle.
    Cli.Run live = Cli.run("repair", cp.toString());
    assertThat(live.exit()).as(live.toString()).isEqualTo(1);
    assertThat(live.err()).contains("refused").contains("less than --min-idle 10 min");
    Cli.Run young = Cli.run("repair", cp.toString(), "--min-idle=0");
    assertThat(young.exit()).as(young.toString()).isEqualTo(1);
    assertThat(young.out())
        .contains("CANNOT   " + tornChangelog.toUri())
        .contains("within the torn-file grace period");

    Files.setLastModifiedTime(
        tornChangelog, FileTime.from(Instant.now().minus(Duration.ofMinutes(10))));
    String before = contents(cp);
    Cli.Run dry = Cli.run("repair", cp.toString(), "--min-idle=0");
    assertThat(dry.exit()).as(dry.toString()).isZero();
    assertThat(dry.out())
        .contains("WOULD FIX " + torn.toUri())
        .contains("WOULD FIX " + tornChangelog.toUri())
        .contains("WOULD FIX " + sameCopy.toUri())
        .contains("WOULD FIX " + tornCopy.toUri())
        .contains("no backup: the entry holds the same bytes")
        .contains("4 fixes planned, 0 damaged files repair cannot fix; run with --apply");
    assertThat(contents(cp)).as("a dry run changes nothing").isEqualTo(before);
    System.out.println("repair (dry run):\n" + dry.out());

    Cli.Run applied = Cli.run("repair", cp.toString(), "--min-idle=0", "--apply");
    assertThat(applied.exit()).as(applied.toString()).isZero();
    assertThat(applied.out())
        .contains("moved    " + torn.toUri() + " to ")
        .contains("deleted  " + sameCopy.toUri())
        .contains("verify after the repair:")
        .contains("clean: checked");
    System.out.println("repair --apply:\n" + applied.out());
    assertThat(torn).doesNotExist();
    assertThat(tornChangelog).doesNotExist();
    assertThat(sameCopy).doesNotExist();
    assertThat(tornCopy).doesNotExist();
    Path backup;
    try (Stream<Path> runs = Files.list(cp.resolve("_streamstate_backup"))) {
      backup = runs.findFirst().orElseThrow();
    }
    assertThat(backup.resolve("offsets/3")).hasBinaryContent(Arrays.copyOf(two, two.length / 2));
    assertThat(backup.resolve("state/1/0/changelog/" + tornChangelog.getFileName()))
        .hasBinaryContent(new byte[] {'S', 'S', 'T', 'F', 2, 1});
    assertThat(backup.resolve("commits/" + tornCopy.getFileName())).isRegularFile();
    assertThat(backup.resolve("offsets/" + sameCopy.getFileName())).doesNotExist();
    assertThat(Cli.run("repair", cp.toString(), "--min-idle=0").out())
        .contains("nothing to repair");

    // Spark's own manager (the session's) plans batch 3 again and goes on.
    q.start(confs).batch(8, 1, 9).batch(10);
    q.stop(confs);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
  }

  /** What repair cannot fix is named, with why; nothing is touched, exit 1. */
  @Test
  void repairNamesWhatItCannotFix() throws IOException {
    Path copy = Damage.copy(changelogs, work.resolve("repair-cannot"));
    Path target;
    try (Stream<Path> files = Files.list(copy.resolve("state/0/1/changelog"))) {
      target =
          files
              .filter(p -> p.getFileName().toString().startsWith("00000000000000000003-"))
              .findFirst()
              .orElseThrow();
    }
    Damage.flipByte(target);
    String before = contents(copy);

    Cli.Run run = Cli.run("repair", copy.toString(), "--min-idle=0", "--apply");

    assertThat(run.exit()).as(run.toString()).isEqualTo(1);
    assertThat(run.out())
        .contains("CANNOT   " + target.toUri())
        .contains("repair has no fix for it: needed by the lineage of version 4")
        .contains("0 fixes, 1 damaged file repair cannot fix");
    assertThat(contents(copy)).isEqualTo(before);
    Cli.Run bad = Cli.run("repair", copy.toString(), "--min-idle=soon");
    assertThat(bad.exit()).isEqualTo(ExitCodes.USAGE);
    assertThat(bad.err().strip()).startsWith("streamstate repair: --min-idle 'soon'");
  }
}
