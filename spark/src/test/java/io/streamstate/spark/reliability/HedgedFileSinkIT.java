package io.streamstate.spark.reliability;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.input_file_name;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.to_json;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.spark.HedgedFileCommitProtocol;
import io.streamstate.spark.SlowPrimaryFileSystem;
import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.function.Function;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.sinks.FileStreamSinkLog;
import org.apache.spark.sql.execution.streaming.sinks.SinkFileStatus;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * Exactly-once output of Spark's file sink with {@link HedgedFileCommitProtocol}, every sink write
 * hedged on a store whose primary copies are slow ({@link SlowPrimaryFileSystem}: each hedge wins).
 * Each stateful query is killed (a child driver JVM, SIGKILL) at its sink's job commit, then
 * restarted, stopped and restarted here as more input arrives; its output, read back through
 * Spark's file source (which honours {@code _spark_metadata}), equals an uninterrupted reference
 * run of Spark alone (its HDFS-backed provider and file-sink protocol), as a multiset of rows. And
 * directly: every file a batch lists exists, is complete and has the listed length; no task output
 * is listed twice (a primary and its alternate); the read opens only listed files, while unlisted
 * {@code part-} files (a killed batch's outputs, a planted torn or duplicate file) lie next to
 * them.
 */
class HedgedFileSinkIT {
  private static final int BATCHES = 6;
  private static final Duration CHILD_TIMEOUT = Duration.ofMinutes(3);
  private static final String UUID_PATTERN = "[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}";

  static final Path work = Sessions.newWorkDir(HedgedFileSinkIT.class);
  private static final Path allInput = work.resolve("input");
  private static final Map<SinkQueries.Query, List<String>> reference =
      new EnumMap<>(SinkQueries.Query.class);
  private static SparkSession spark;

  /** Driver JVMs this class started: none may outlive a test. */
  private final List<ChildJvm> started = new ArrayList<>();

  @BeforeAll
  static void runReferences() throws Exception {
    SinkQueries.writeInput(allInput, 15, BATCHES);
    spark = ReliabilityQuery.start("HedgedFileSinkIT", "local[2]", SinkQueries.sessionConf(work));
    SinkQueries.useSparkDefaults(spark);
    for (SinkQueries.Query query : SinkQueries.Query.values()) {
      Path dir = work.resolve("reference-" + query);
      String out = dir.resolve("out").toString();
      SinkQueries.runOnce(
          spark, query, allInput, dir.resolve("checkpoint").toUri().toString(), out);
      reference.put(query, SinkQueries.read(spark, query, out));
    }
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  @AfterEach
  void killLeftoverDrivers() throws InterruptedException {
    for (ChildJvm child : started) {
      if (child.process().isAlive()) {
        child.killHard();
      }
    }
  }

  @Test
  void aggregationIntoParquetKilledBeforeItsManifestMatchesTheReference() throws Exception {
    SinkQueries.Query query = SinkQueries.Query.AGGREGATE_INTO_PARQUET;
    assertThat(reference.get(query)).hasSizeGreaterThan(10);
    Run run = new Run(query, "before-manifest");

    run.killedAt(2);
    assertThat(run.out.resolve("_spark_metadata").resolve("2")).doesNotExist();
    List<Path> killedBatchOutputs = new ArrayList<>(SinkQueries.partFilesOnDisk(run.out));
    killedBatchOutputs.removeAll(run.listed());
    assertThat(killedBatchOutputs)
        .as("files published by batch 2's tasks before the kill, listed nowhere")
        .isNotEmpty();

    HedgeMetrics.Snapshot hedges = run.restartStopRestart();

    // A torn copy of an output: reading it would fail the query.
    Path listedFile = run.listed().get(0);
    byte[] bytes = Files.readAllBytes(listedFile);
    Path torn = listedFile.resolveSibling(unlistedName(listedFile));
    Files.write(torn, Arrays.copyOf(bytes, bytes.length / 2));

    run.assertExactlyOnce(hedges);
    assertThat(run.unlisted()).containsAll(killedBatchOutputs).contains(torn);
  }

  @Test
  void deduplicationIntoJsonKilledAfterItsManifestMatchesTheReference() throws Exception {
    SinkQueries.Query query = SinkQueries.Query.DEDUPLICATE_INTO_JSON;
    assertThat(reference.get(query)).hasSizeGreaterThan(50);
    Run run = new Run(query, "after-manifest");

    run.killedAt(2);
    assertThat(run.out.resolve("_spark_metadata").resolve("2")).exists();
    List<Path> batch2 = run.listedIn(2);

    HedgeMetrics.Snapshot hedges = run.restartStopRestart();

    assertThat(run.listedIn(2))
        .as("batch 2 ran again after the kill, and the sink skipped it")
        .isEqualTo(batch2);
    // A complete duplicate of an output: reading it would double its rows.
    Path listedFile = run.listed().stream().filter(p -> size(p) > 0).findFirst().orElseThrow();
    Path duplicate = listedFile.resolveSibling(unlistedName(listedFile));
    Files.copy(listedFile, duplicate);

    run.assertExactlyOnce(hedges);
    assertThat(run.unlisted()).contains(duplicate);
  }

  @Test
  void everyFileFormatPublishesThroughTheSpill() throws Exception {
    Path input = work.resolve("formats-input");
    SinkQueries.stage(allInput, input, 0, 2);
    List<String> expected =
        SinkQueries.rows(spark.read().schema(SinkQueries.EVENTS).json(input.toString()));
    SinkQueries.useHedged(spark);
    HedgeMetrics.Snapshot before = HedgedFileCommitProtocol.hedgeMetrics();

    record Case(
        String name,
        String format,
        Function<Dataset<Row>, Dataset<Row>> shape,
        String partitionBy,
        String readAs) {}
    List<Case> cases =
        List.of(
            new Case("parquet", "parquet", d -> d, null, "parquet"),
            new Case("orc", "orc", d -> d, null, "orc"),
            new Case("json", "json", d -> d, null, "json"),
            new Case("csv", "csv", d -> d, null, "csv"),
            new Case(
                "text", "text", d -> d.select(to_json(struct(col("*"))).as("value")), null, "json"),
            new Case("parquet-by-key", "parquet", d -> d, "key", "parquet"));
    for (Case c : cases) {
      Path dir = work.resolve("format-" + c.name());
      String out = SlowPrimaryFileSystem.uriOf(dir.resolve("out"));
      var writer =
          c.shape()
              .apply(
                  spark
                      .readStream()
                      .schema(SinkQueries.EVENTS)
                      .option("maxFilesPerTrigger", 1)
                      .json(input.toString()))
              .writeStream()
              .format(c.format())
              .option("checkpointLocation", dir.resolve("checkpoint").toUri().toString())
              .option("path", out);
      if (c.partitionBy() != null) {
        writer = writer.partitionBy(c.partitionBy());
      }
      StreamingQuery q = writer.start();
      try {
        q.processAllAvailable();
      } finally {
        q.stop();
      }
      Dataset<Row> read =
          spark
              .read()
              .schema(SinkQueries.EVENTS)
              .format(c.readAs())
              .load(out)
              .select("id", "key", "ts", "value");
      assertThat(SinkQueries.rows(read)).as(c.name()).isEqualTo(expected);
      List<Path> listed = listedFiles(out, Set.of());
      assertThat(listed).as(c.name()).isNotEmpty();
      // Failed primaries are withdrawn by their own threads, maybe just after the query stopped.
      await()
          .atMost(Duration.ofSeconds(30))
          .untilAsserted(
              () ->
                  assertThat(SinkQueries.partFilesOnDisk(dir.resolve("out")))
                      .as("%s: part files on disk are the listed ones", c.name())
                      .containsExactlyInAnyOrderElementsOf(listed));
      if (c.partitionBy() != null) {
        assertThat(listed)
            .as("files in partition directories")
            .allMatch(p -> p.getParent().getFileName().toString().startsWith("key="));
      }
    }
    HedgeMetrics.Snapshot hedges = HedgedFileCommitProtocol.hedgeMetrics().since(before);
    assertThat(hedges.hedgesFired()).as(hedges.toString()).isPositive();
    assertThat(hedges.hedgesWon()).as(hedges.toString()).isPositive();
  }

  /** One query's checkpoint and output under test, through its kill, stops and restarts. */
  private final class Run {
    final SinkQueries.Query query;
    final String hold;
    final Path dir;
    final Path input;
    final Path checkpointDir;
    final Path out;
    final String outUri;

    Run(SinkQueries.Query query, String hold) throws IOException {
      this.query = query;
      this.hold = hold;
      this.dir = work.resolve(query + "-" + hold);
      Files.createDirectories(dir);
      this.input = dir.resolve("input");
      this.checkpointDir = dir.resolve("checkpoint");
      this.out = dir.resolve("out");
      this.outUri = SlowPrimaryFileSystem.uriOf(out);
    }

    /**
     * Runs the first half of the input in a child driver, killed at {@code hold} of {@code batch}.
     */
    void killedAt(long batch) throws Exception {
      SinkQueries.stage(allInput, input, 0, 4);
      Path marker = dir.resolve("holding");
      ChildJvm child =
          ChildJvm.start(
              HedgedFileSinkDriverMain.class,
              dir.resolve("killed-driver.log"),
              query.name(),
              input.toString(),
              checkpointDir.toUri().toString(),
              outUri,
              dir.resolve("driver-work").toString(),
              hold + ":" + batch,
              marker.toString());
      started.add(child);
      await()
          .atMost(CHILD_TIMEOUT)
          .pollInterval(Duration.ofMillis(100))
          .until(() -> Files.exists(marker) || !child.process().isAlive());
      assertThat(child.process().isAlive())
          .as("driver reached the kill point; its output:%n%s", child.output())
          .isTrue();
      child.killHard();
      assertThat(checkpointDir.resolve("offsets").resolve(String.valueOf(batch))).exists();
      assertThat(checkpointDir.resolve("commits").resolve(String.valueOf(batch))).doesNotExist();
    }

    /**
     * Restarts the query here on the same checkpoint (it runs the killed batch again), stops it,
     * restarts it twice more as the rest of the input arrives; returns the sink hedges meanwhile.
     */
    HedgeMetrics.Snapshot restartStopRestart() throws Exception {
      HedgeMetrics.Snapshot before = HedgedFileCommitProtocol.hedgeMetrics();
      SinkQueries.useHedged(spark);
      String checkpoint = checkpointDir.toUri().toString();
      SinkQueries.runOnce(spark, query, input, checkpoint, outUri);
      SinkQueries.stage(allInput, input, 4, 5);
      SinkQueries.runOnce(spark, query, input, checkpoint, outUri);
      SinkQueries.stage(allInput, input, 5, BATCHES);
      SinkQueries.runOnce(spark, query, input, checkpoint, outUri);
      return HedgedFileCommitProtocol.hedgeMetrics().since(before);
    }

    List<Path> listed() {
      return listedFiles(outUri, Set.of());
    }

    List<Path> listedIn(long batch) {
      return listedFiles(outUri, Set.of(batch));
    }

    List<Path> unlisted() {
      List<Path> unlisted = new ArrayList<>(SinkQueries.partFilesOnDisk(out));
      unlisted.removeAll(listed());
      return unlisted;
    }

    void assertExactlyOnce(HedgeMetrics.Snapshot hedges) {
      assertThat(hedges.hedgesFired()).as("sink hedges fired: %s", hedges).isPositive();
      assertThat(hedges.hedgesWon()).as("sink hedges won: %s", hedges).isPositive();

      List<Path> listed = listed();
      Set<Path> alternates = SlowPrimaryFileSystem.alternates();
      assertThat(listed)
          .as("outputs committed under their alternate (hedge) name")
          .anyMatch(alternates::contains);
      assertThat(unlisted()).as("part files on disk that no batch lists").isNotEmpty();

      List<String> rows = SinkQueries.read(spark, query, outUri);
      assertThat(rows)
          .as(
              "read through _spark_metadata vs the reference:%n%s",
              SinkQueries.difference(reference.get(query), rows))
          .isEqualTo(reference.get(query));

      Dataset<Row> files =
          spark
              .read()
              .schema(query.outputSchema())
              .format(query.format)
              .load(outUri)
              .select(input_file_name().as("file"))
              .distinct();
      List<Path> read = new ArrayList<>();
      for (Row r : files.collectAsList()) {
        read.add(
            Path.of(new org.apache.hadoop.fs.Path(URI.create(r.getString(0))).toUri().getPath()));
      }
      assertThat(read).as("files the read opened").isNotEmpty();
      assertThat(listed).as("files the read opened are all listed").containsAll(read);
      System.out.printf(
          "hedged file sink %s (killed %s): %d files listed, %d unlisted part files on disk, %d"
              + " read; sink hedges: %d writes, %d fired, %d won, %d losers deleted, %d left%n",
          query,
          hold,
          listed.size(),
          unlisted().size(),
          read.size(),
          hedges.writes(),
          hedges.hedgesFired(),
          hedges.hedgesWon(),
          hedges.losersCleaned(),
          hedges.losersLeft());
    }
  }

  /**
   * The files {@code _spark_metadata} lists for {@code batches} (all if empty), as local paths,
   * checked on the way: each exists, has the listed length and is complete for its format, and each
   * batch lists one file per task output (never a primary and its alternate both).
   */
  private static List<Path> listedFiles(String outUri, Set<Long> batches) {
    FileStreamSinkLog log =
        new FileStreamSinkLog(
            FileStreamSinkLog.VERSION(), spark, outUri + "/_spark_metadata", Option.empty());
    long latest = (Long) log.getLatestBatchId().get();
    Path out = Path.of(URI.create(outUri).getPath());
    List<Path> listed = new ArrayList<>();
    for (long b = 0; b <= latest; b++) {
      if (!batches.isEmpty() && !batches.contains(b)) {
        continue;
      }
      SinkFileStatus[] files = log.get(b).get();
      Set<String> outputs = new HashSet<>();
      for (SinkFileStatus f : files) {
        Path local = Path.of(f.toFileStatus().getPath().toUri().getPath());
        String output = out.relativize(local).toString().replaceFirst(UUID_PATTERN, "*");
        assertThat(outputs.add(output))
            .as("batch %d lists task output %s once (%s)", b, output, local)
            .isTrue();
        assertThat(local).as("listed in batch %d", b).exists();
        assertThat(size(local)).as("length of %s", local).isEqualTo(f.size());
        assertComplete(local);
        listed.add(local);
      }
    }
    assertThat(listed).doesNotHaveDuplicates();
    return listed;
  }

  private static void assertComplete(Path file) {
    try {
      byte[] bytes = Files.readAllBytes(file);
      String name = file.getFileName().toString();
      if (name.endsWith(".parquet")) {
        byte[] magic = "PAR1".getBytes(StandardCharsets.US_ASCII);
        assertThat(bytes.length).as(name).isGreaterThanOrEqualTo(12);
        assertThat(Arrays.copyOfRange(bytes, 0, 4)).as("%s header", name).isEqualTo(magic);
        assertThat(Arrays.copyOfRange(bytes, bytes.length - 4, bytes.length))
            .as("%s footer", name)
            .isEqualTo(magic);
      } else if (name.endsWith(".json") && bytes.length > 0) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        assertThat(text).as(name).endsWith("\n");
        assertThat(text.lines()).as(name).allMatch(l -> l.startsWith("{") && l.endsWith("}"));
      }
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private static long size(Path p) {
    try {
      return Files.size(p);
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** A part-file name for the same task output as {@code file}, with a UUID nothing lists. */
  private static String unlistedName(Path file) {
    return file.getFileName().toString().replaceFirst(UUID_PATTERN, UUID.randomUUID().toString());
  }
}
