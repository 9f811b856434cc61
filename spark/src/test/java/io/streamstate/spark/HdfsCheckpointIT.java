package io.streamstate.spark;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DistributedFileSystem;
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

  /**
   * What a driver killed while writing {@code entry} leaves on HDFS: the entry created (a hedged
   * entry is created empty and written at close), {@code prefix} of it written and flushed, never
   * closed, and its lease held for a client that is gone (the stream aborted and the lease renewer
   * stopped: no close, no lease release, as a killed JVM).
   */
  private static void leaveAsADyingDriverWould(Path entry, byte[] prefix) throws IOException {
    DistributedFileSystem dying =
        (DistributedFileSystem) FileSystem.newInstance(entry.toUri(), independentConf());
    FSDataOutputStream out = dying.create(entry, false);
    if (prefix.length > 0) {
      out.write(prefix);
      out.hflush();
    }
    // No close (so no complete), and no lease renewal or release: the stream and client just stop.
    org.apache.hadoop.hdfs.DFSTestUtil.abortStream(
        (org.apache.hadoop.hdfs.DFSOutputStream) out.getWrappedStream());
    org.apache.hadoop.hdfs.DFSClientAdapter.stopLeaseRenewer(dying);
  }

  private static Configuration independentConf() {
    Configuration conf = new Configuration();
    CLIENT_SETTINGS.forEach(conf::set);
    conf.setBoolean("fs.hdfs.impl.disable.cache", true);
    return conf;
  }

  /**
   * A driver died while writing a log entry on HDFS: the entry is still under construction, its
   * lease held by the dead client (what YARN's second application attempt found in the README's
   * cluster-mode demo). The restarted driver recovers the lease, which also fences a writer that is
   * still alive (its close fails), and sets the entry aside.
   */
  @Test
  @Order(5)
  void anEntryADeadDriverLeftUnderConstructionIsFencedAndSetAside() throws Exception {
    Path root = dfs.path("/cfm/dead-driver");
    Path offsets = new Path(root, "offsets");
    Path commits = new Path(root, "commits");
    RenameFreeCheckpointFileManager first = new RenameFreeCheckpointFileManager(root, conf());
    write(first, new Path(offsets, "0"), logEntry("offsets0", 300), false);
    write(first, new Path(commits, "0"), logEntry("commits0", 60), false);
    leaveAsADyingDriverWould(new Path(offsets, "1"), "v1\n{\"batchWaterm".getBytes(UTF_8));

    RenameFreeCheckpointFileManager restarted =
        new RenameFreeCheckpointFileManager(root, independentConf());
    assertThat(batchIds(restarted, offsets)).containsExactly("0");
    assertThat(setAsideNames(offsets)).singleElement().asString().startsWith(".1.torn-");
    byte[] offsets1 = logEntry("offsets1", 300);
    write(restarted, new Path(offsets, "1"), offsets1, false);
    assertThat(read(restarted, new Path(offsets, "1"))).isEqualTo(offsets1);

    // A writer still alive (a previous application attempt not quite dead) is fenced.
    FileSystem alive = FileSystem.newInstance(root.toUri(), independentConf());
    try {
      FSDataOutputStream out = alive.create(new Path(commits, "1"), false);
      out.write("v1\n{\"nextBatch".getBytes(UTF_8));
      out.hflush();
      RenameFreeCheckpointFileManager third =
          new RenameFreeCheckpointFileManager(root, independentConf());
      assertThat(batchIds(third, commits)).containsExactly("0");
      assertThatThrownBy(
              () -> {
                out.write("WatermarkMs\":0}".getBytes(UTF_8));
                out.close();
              })
          .isInstanceOf(IOException.class);
      byte[] commits1 = logEntry("commits1", 60);
      write(third, new Path(commits, "1"), commits1, false);
      assertThat(read(third, new Path(commits, "1"))).isEqualTo(commits1);
    } finally {
      alive.close();
    }
  }

  private static java.util.List<String> batchIds(RenameFreeCheckpointFileManager fm, Path dir) {
    return java.util.Arrays.stream(fm.list(dir, p -> p.getName().matches("\\d+")))
        .map(f -> f.getPath().getName())
        .toList();
  }

  private static java.util.List<String> setAsideNames(Path dir) throws IOException {
    return java.util.Arrays.stream(dfs.fileSystem().listStatus(dir))
        .map(f -> f.getPath().getName())
        .filter(n -> n.contains(".torn-"))
        .toList();
  }

  /**
   * A real query on HDFS, restarted twice after its driver "died" mid-write: once while writing the
   * newest commit entry (the batch runs again), once while writing the next offset entry (planned
   * again). Its output equals Spark's provider's run of the same steps without crashes: nothing
   * lost, nothing counted twice (Spark's memory sink skips a batch it already has, as an idempotent
   * sink does).
   */
  @Test
  @Order(6)
  void aQueryWhoseDriverDiedWritingALogEntryResumesOnHdfsWithTheReferenceOutput() throws Exception {
    String checkpoint = checkpointUri("torn-entries");
    Path cp = new Path(checkpoint);
    Runnable tearNewestCommit =
        () -> {
          try {
            Path entry =
                new Path(new Path(cp, "commits"), Long.toString(newestBatch(cp, "commits")));
            dfs.fileSystem().delete(entry, false);
            leaveAsADyingDriverWould(entry, new byte[0]);
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        };
    Runnable tearNextOffsets =
        () -> {
          try {
            long next = newestBatch(cp, "offsets") + 1;
            leaveAsADyingDriverWould(
                new Path(new Path(cp, "offsets"), Long.toString(next)),
                "v1\n{\"batchWatermarkMs\":1".getBytes(UTF_8));
          } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
          }
        };
    ClockedRun run = new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Append());
    ClockedRun.Result reference =
        run.run(TestSessions.HDFS, work.resolve("torn-reference"), tornSteps(() -> {}, () -> {}));
    ClockedRun.Result ours =
        run.run(
            TestSessions.OURS,
            checkpoint,
            tornSteps(tearNewestCommit, tearNextOffsets),
            Map.of(CFM_KEY, OUR_CFM));
    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(reference.rows());
    assertThat(setAsideNames(new Path(cp, "commits"))).hasSize(1);
    assertThat(setAsideNames(new Path(cp, "offsets"))).hasSize(1);
  }

  private static ClockedRun.Steps tornSteps(Runnable first, Runnable second) {
    return new ClockedRun.Steps()
        .data(0, ClockedRun.ev("a", 100, 1), ClockedRun.ev("b", 101, 2))
        .tick()
        .data(0, ClockedRun.ev("a", 112, 4), ClockedRun.ev("c", 115, 5))
        .tick()
        .restart(first)
        .data(0, ClockedRun.ev("b", 108, 6), ClockedRun.ev("a", 125, 7))
        .tick()
        .tick()
        .restart(second)
        .data(0, ClockedRun.ev("a", 150, 2), ClockedRun.ev("e", 152, 4))
        .tick()
        .data(0, ClockedRun.ev("z", 300, 1))
        .ticks(2);
  }

  private static long newestBatch(Path checkpoint, String log) throws IOException {
    long newest = -1;
    for (FileStatus f : dfs.fileSystem().listStatus(new Path(checkpoint, log))) {
      if (f.getPath().getName().matches("\\d+")) {
        newest = Math.max(newest, Long.parseLong(f.getPath().getName()));
      }
    }
    return newest;
  }
}
