package io.streamstate.cli;

import static io.streamstate.cli.Cli.list;
import static io.streamstate.cli.Cli.map;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.hadoop.S3ProxyFixture;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The command on a checkpoint on S3A (an in-process S3Proxy) that a real query wrote with our
 * provider and our checkpoint file manager (no journals on an object store: plain log entries,
 * segment files): inspect, verify, a damaged snapshot; and the errors of a store the command cannot
 * use: wrong credentials, no conditional create.
 */
class S3aCheckpointIT {
  static final Path work = SparkQueries.newWorkDir(S3aCheckpointIT.class);
  private static S3ProxyFixture s3;
  private static SparkSession spark;
  private static String checkpoint;

  private static final Map<String, String> OURS =
      Map.of(
          SparkQueries.PROVIDER_CLASS, SparkQueries.OURS,
          SparkQueries.CFM_CLASS, SparkQueries.OUR_CFM);

  @BeforeAll
  static void start() throws Exception {
    s3 = S3ProxyFixture.start();
    Map<String, String> extra = new HashMap<>();
    s3.sharedClientSettings().forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    spark = SparkQueries.start("S3aCheckpointIT", work, extra);
    checkpoint = S3ProxyFixture.path("checkpoints/q").toString();
    SparkQueries.DedupCount query = new SparkQueries.DedupCount(spark, checkpoint, "t_s3a");
    query.start(OURS).batch(1, 2, 3).batch(3, 4, 5).batch(6, 7).batch(1, 8, 9);
    query.stop(OURS);
    assertThat(query.rows()).containsExactlyElementsOf(query.expectedRows());
    Thread.sleep(1500); // a stopped query's maintenance may still upload a snapshot
  }

  @AfterAll
  static void stop() throws Exception {
    if (spark != null) {
      spark.stop();
    }
    if (s3 != null) {
      s3.close();
    }
  }

  /** The settings that reach S3Proxy, as --conf. */
  private static Map<String, String> client() {
    return s3.sharedClientSettings();
  }

  /** dump on S3A (segment files, no journal): the dedup's rows of partition 0 are the model's. */
  @Test
  void dumpOnS3() {
    Cli.Run dump = Cli.run(client(), "dump", checkpoint, "--operator", "1", "--partition", "0");

    assertThat(dump.exit()).as(dump.toString()).isZero();
    assertThat(DumpModel.printed(dump.out()))
        .isNotEmpty()
        .containsExactlyEntriesOf(
            DumpModel.inPartition(
                spark,
                DumpModel.distinct(DumpModel.sentUpTo(4)),
                0,
                SparkQueries.SHUFFLE_PARTITIONS));
  }

  @Test
  void inspectAndVerifyOnS3() {
    Cli.Run inspect = Cli.run(client(), "inspect", checkpoint, "--json");
    assertThat(inspect.exit()).as(inspect.toString()).isZero();
    Map<String, Object> r = inspect.json();
    assertThat(r.get("lastCommittedBatch")).isEqualTo(3L);
    assertThat(map(r.get("offsets")).get("layout")).isEqualTo("files");
    assertThat(r.get("providerClass")).isEqualTo(SparkQueries.OURS);
    for (Map<String, Object> op : list(r.get("operators"))) {
      assertThat(op.get("partitions")).asList().containsExactly(0L, 1L);
      for (Map<String, Object> s : list(op.get("stores"))) {
        assertThat(s.get("recoverable")).isEqualTo(true);
        assertThat(s.get("newestVersion")).isEqualTo(4L);
        // No appends on S3: group commits are segment files.
        assertThat(map(map(s.get("files")).get("segmentMembers")).get("count")).isEqualTo(4L);
      }
    }

    Cli.Run verify = Cli.run(client(), "verify", checkpoint);
    assertThat(verify.exit()).as(verify.toString()).isZero();
    assertThat(verify.out()).contains("4 of 4 stores recoverable at version 4");

    Cli.Run export = Cli.run(client(), "export-logs", checkpoint);
    assertThat(export.exit()).as(export.toString()).isZero();
    assertThat(export.out()).contains("no log journal").contains("nothing to write");
  }

  @Test
  void verifyNamesADamagedSegmentOnS3() throws Exception {
    FileSystem fs = s3.fileSystem();
    org.apache.hadoop.fs.Path segment = null;
    RemoteIterator<LocatedFileStatus> files =
        fs.listFiles(S3ProxyFixture.path("checkpoints/q/state/_segments"), false);
    while (files.hasNext()) {
      org.apache.hadoop.fs.Path p = files.next().getPath();
      if (p.getName().startsWith("00000000000000000004-")) {
        segment = p;
      }
    }
    assertThat(segment).as("a segment of version 4").isNotNull();
    Damage.flipByte(fs, segment);
    try {
      Cli.Run run = Cli.run(client(), "verify", checkpoint);

      assertThat(run.exit()).as(run.toString()).isEqualTo(1);
      assertThat(run.out()).contains("DAMAGED  " + segment).contains("is corrupt");
      System.out.println("verify of a damaged segment on S3:\n" + run.out());
    } finally {
      Damage.flipByte(fs, segment); // flipped back
    }
  }

  @Test
  void wrongCredentialsAreOneLineAndExitThree() {
    Map<String, String> conf = new HashMap<>(client());
    conf.put("fs.s3a.secret.key", "wrong");
    conf.put("fs.s3a.impl.disable.cache", "true");
    conf.put("fs.s3a.attempts.maximum", "1");
    conf.put("fs.s3a.retry.limit", "1");

    Cli.Run run = Cli.run(conf, "inspect", checkpoint);

    assertThat(run.exit()).as(run.toString()).isEqualTo(ExitCodes.UNREADABLE);
    assertThat(run.err().strip()).startsWith("streamstate inspect: ").doesNotContain("\n");
    System.out.println("inspect with a wrong secret key: " + run.err());
  }

  @Test
  void aStoreWithoutConditionalCreateIsRefusedNamingTheSetting() {
    Map<String, String> conf = new HashMap<>(client());
    conf.put("fs.s3a.create.conditional.enabled", "false");
    conf.put("fs.s3a.impl.disable.cache", "true");

    Cli.Run run = Cli.run(conf, "verify", checkpoint);

    assertThat(run.exit()).as(run.toString()).isEqualTo(ExitCodes.USAGE);
    assertThat(run.err()).contains("create-if-absent").doesNotContain("\n\tat");
  }

  /** repartition on S3A: the query resumes on the new count with the model's output. */
  @Test
  void repartitionOnS3() throws Exception {
    Map<String, String> ours = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.OURS);
    String location = S3ProxyFixture.path("checkpoints/repartition").toString();
    SparkQueries.DedupCount q = new SparkQueries.DedupCount(spark, location, "t_s3a_repartition");
    q.start(ours).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(ours);

    Cli.Run run = Cli.run(client(), "repartition", location, "--partitions", "3");

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out()).contains("rewritten into 3 partitions as batch 2");
    q.start(ours).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(ours);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(s3.fileSystem().exists(S3ProxyFixture.path("checkpoints/repartition/state/0/2")))
        .isTrue();
  }

  /**
   * convert on S3A, the way back: a query on ours moves to Spark's RocksDB provider and resumes
   * with the model's output.
   */
  @Test
  void convertFromOursToRocksDbOnS3() throws Exception {
    Map<String, String> ours = Map.of(SparkQueries.PROVIDER_CLASS, SparkQueries.OURS);
    String location = S3ProxyFixture.path("checkpoints/convert").toString();
    SparkQueries.DedupCount q = new SparkQueries.DedupCount(spark, location, "t_s3a_convert");
    q.start(ours).batch(1, 2, 3).batch(3, 4, 5, 6, 7);
    q.stop(ours);

    Cli.Run run = Cli.run(client(), "convert", location, "--to", "rocksdb");

    assertThat(run.exit()).as(run.toString()).isZero();
    assertThat(run.out()).contains("rewritten for " + SparkQueries.ROCKSDB + " as batch 2");
    q.start(ours).batch(8, 1, 9).batch(10, 11, 12, 2);
    q.stop(ours);
    assertThat(q.rows()).containsExactlyElementsOf(q.expectedRows());
    assertThat(s3.fileSystem().exists(S3ProxyFixture.path("checkpoints/convert/state/0/0/3.zip")))
        .as("Spark's RocksDB snapshot of version 3, the conversion batch's")
        .isTrue();
  }

  /**
   * repair on S3A, on a copy of the checkpoint: a torn changelog of a batch that never committed
   * (the grace period set to 0 with --conf: S3 keeps no settable modification time) and a hedge
   * copy with its entry's bytes; the dry run changes nothing, --apply fixes both, verify is clean.
   */
  @Test
  void repairOnS3() throws Exception {
    FileSystem fs = s3.fileSystem();
    org.apache.hadoop.fs.Path copy = S3ProxyFixture.path("checkpoints/repair");
    // A client of its own: the shared one may hold what it read of a segment another test
    // rewrote (its reads then fail with 412).
    org.apache.hadoop.conf.Configuration classic =
        new org.apache.hadoop.conf.Configuration(fs.getConf());
    classic.set("fs.s3a.input.stream.type", "classic");
    try (FileSystem fresh = FileSystem.newInstance(copy.toUri(), classic)) {
      org.apache.hadoop.fs.FileUtil.copy(
          fresh, S3ProxyFixture.path("checkpoints/q"), fresh, copy, false, fs.getConf());
    }
    org.apache.hadoop.fs.Path torn =
        new org.apache.hadoop.fs.Path(
            copy, "state/0/1/changelog/00000000000000000005-0123456789abcdef.changelog");
    try (java.io.OutputStream out = fs.create(torn, false)) {
      out.write(new byte[] {'S', 'S', 'T', 'F', 2, 1});
    }
    byte[] commit3;
    try (java.io.InputStream in = fs.open(new org.apache.hadoop.fs.Path(copy, "commits/3"))) {
      commit3 = in.readAllBytes();
    }
    org.apache.hadoop.fs.Path sameCopy = new org.apache.hadoop.fs.Path(copy, "commits/.3.hedge");
    try (java.io.OutputStream out = fs.create(sameCopy, false)) {
      out.write(io.streamstate.core.format.HedgeCopyFile.encode(commit3));
    }
    Map<String, String> conf = new HashMap<>(client());
    conf.put("spark.sql.streaming.stateStore.streamstate.tornFileGraceMs", "0");

    Cli.Run dry = Cli.run(conf, "repair", copy.toString(), "--min-idle=0");
    assertThat(dry.exit()).as(dry.toString()).isZero();
    assertThat(dry.out())
        .contains("WOULD FIX " + torn)
        .contains("WOULD FIX " + sameCopy)
        .contains("no backup: the entry holds the same bytes");
    assertThat(fs.exists(torn)).isTrue();
    assertThat(fs.exists(sameCopy)).isTrue();

    Cli.Run applied = Cli.run(conf, "repair", copy.toString(), "--min-idle=0", "--apply");
    assertThat(applied.exit()).as(applied.toString()).isZero();
    assertThat(applied.out())
        .contains("moved    " + torn + " to ")
        .contains("deleted  " + sameCopy)
        .contains("clean: checked");
    assertThat(fs.exists(torn)).isFalse();
    assertThat(fs.exists(sameCopy)).isFalse();
    assertThat(fs.exists(new org.apache.hadoop.fs.Path(copy, "commits/3"))).isTrue();
    System.out.println("repair --apply on S3:\n" + applied.out());
  }
}
