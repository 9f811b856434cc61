package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.spark.repartition.OfflineConvert;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Moving a stopped query's state between providers with {@link OfflineConvert}, for every stateful
 * operator: a query starts on one of Spark's providers (HDFS-backed; RocksDB with and without
 * changelog checkpointing, under checkpoint format v1 and v2), is converted to ours and resumes,
 * then is converted to Spark's RocksDB provider and resumes again; its output equals an
 * uninterrupted run on Spark's HDFS-backed provider, and each run after a conversion ran on the
 * provider the conversion pinned, whose files hold the state.
 */
class OfflineConvertIT {
  static final Path work = TestSessions.newWorkDir(OfflineConvertIT.class);
  private static final String ROCKSDB = OfflineConvert.ROCKSDB;
  private static final String CHANGELOG =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";
  private static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    assumeTrue(TestSessions.sparkAtLeast(4, 2), "offline conversion runs Spark 4.2's rewriter");
    spark =
        TestSessions.start("OfflineConvertIT", work, Map.of("spark.sql.shuffle.partitions", "2"));
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  /** One operator's query: its inputs and output mode. */
  private record Case(
      String name, int inputs, Function<List<Dataset<Row>>, Dataset<Row>> query, OutputMode mode) {}

  /**
   * Runs the case starting on {@code firstProvider}, converted to ours after the first run and to
   * Spark's RocksDB provider after the second; and uninterrupted on Spark's HDFS-backed provider.
   */
  private void convertsAndResumes(Case c, String firstProvider, Map<String, String> conf)
      throws Exception {
    ClockedRun run = new ClockedRun(spark, c.inputs(), c.query(), c.mode());
    Path checkpoint = work.resolve(c.name());
    String location = checkpoint.toUri().toString();
    List<OfflineConvert.Result> conversions = new ArrayList<>();
    List<String> targets = List.of(OfflineConvert.STREAMSTATE, ROCKSDB);
    List<String> reference =
        run.run(TestSessions.HDFS, work.resolve(c.name() + "-reference"), steps(c, i -> {})).rows();

    List<String> actual =
        run.run(
                firstProvider,
                checkpoint,
                steps(
                    c,
                    i ->
                        conversions.add(OfflineConvert.run(spark, location, targets.get(i), true))),
                conf)
            .rows();

    assertThat(actual).as("%s: output", c.name()).isNotEmpty().containsExactlyElementsOf(reference);
    assertThat(conversions).hasSize(2);
    assertThat(conversions.get(0).from()).isEqualTo(firstProvider);
    for (int i = 0; i < 2; i++) {
      OfflineConvert.Result r = conversions.get(i);
      assertThat(r.to()).isEqualTo(targets.get(i));
      assertThat(r.batch()).isEqualTo(r.readBatch() + 1);
      assertThat(pinnedProvider(checkpoint, r.batch())).isEqualTo(targets.get(i));
      // The batch after the conversion ran on the pinned provider (Spark copies the pin forward).
      assertThat(pinnedProvider(checkpoint, r.batch() + 1)).isEqualTo(targets.get(i));
    }
    assertThat(conversions.get(1).from()).isEqualTo(OfflineConvert.STREAMSTATE);
    // Each conversion wrote its batch's version (batch + 1) in the new provider's own files.
    long oursVersion = conversions.get(0).batch() + 1;
    assertThat(oursSnapshots(checkpoint.resolve("state/0/0"), oursVersion))
        .as("our snapshot of version %s", oursVersion)
        .isNotEmpty();
    long rocksVersion = conversions.get(1).batch() + 1;
    assertThat(rocksDbFiles(checkpoint.resolve("state/0/0"), rocksVersion))
        .as("Spark's RocksDB files of version %s", rocksVersion)
        .isNotEmpty();
  }

  @Test
  void windowedAggregationFromHdfsBacked() throws Exception {
    convertsAndResumes(
        new Case("aggregation", 1, AggregationIT::windowedQuery, OutputMode.Update()),
        TestSessions.HDFS,
        Map.of());
  }

  @Test
  void windowedAggregationFromRocksDbWithChangelogUnderFormatV2() throws Exception {
    convertsAndResumes(
        new Case("aggregation-v2", 1, AggregationIT::windowedQuery, OutputMode.Update()),
        ROCKSDB,
        Map.of(CHANGELOG, "true", FORMAT, "2"));
  }

  @Test
  void dropDuplicatesFromRocksDbWithChangelog() throws Exception {
    convertsAndResumes(
        new Case(
            "dedup",
            1,
            in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicates("key", "ts"),
            OutputMode.Append()),
        ROCKSDB,
        Map.of(CHANGELOG, "true"));
  }

  @Test
  void streamStreamJoinFromHdfsBacked() throws Exception {
    convertsAndResumes(
        new Case("join", 2, in -> StreamStreamJoinIT.joined(in, "left_outer"), OutputMode.Append()),
        TestSessions.HDFS,
        Map.of());
  }

  @Test
  void flatMapGroupsWithStateFromRocksDb() throws Exception {
    convertsAndResumes(
        new Case(
            "fmgws",
            1,
            in ->
                in.get(0)
                    .withWatermark("ts", "10 seconds")
                    .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                    .flatMapGroupsWithState(
                        new FlatMapGroupsWithStateIT.EventTimeSummer(),
                        OutputMode.Update(),
                        Encoders.LONG(),
                        Encoders.STRING(),
                        GroupStateTimeout.EventTimeTimeout())
                    .toDF(),
            OutputMode.Update()),
        ROCKSDB,
        Map.of(CHANGELOG, "false"));
  }

  @Test
  void refusesTheHdfsBackedTargetAndTheProviderItAlreadyRuns() throws Exception {
    ClockedRun run = new ClockedRun(spark, 1, AggregationIT::windowedQuery, OutputMode.Update());
    Path hdfs = work.resolve("hdfs-provider");
    String location = hdfs.toUri().toString();
    run.run(TestSessions.HDFS, hdfs, new ClockedRun.Steps().data(0, ev("a", 100, 1)).tick());
    String before = listing(hdfs);

    assertThatThrownBy(() -> OfflineConvert.run(spark, location, TestSessions.HDFS, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("loadEmpty");
    assertThatThrownBy(() -> OfflineConvert.run(spark, location, OfflineConvert.HDFS, true))
        .hasMessageContaining("rocksdb");
    Path ours = work.resolve("ours-provider");
    run.run(TestSessions.OURS, ours, new ClockedRun.Steps().data(0, ev("a", 100, 1)).tick());
    assertThatThrownBy(
            () ->
                OfflineConvert.run(
                    spark, ours.toUri().toString(), OfflineConvert.STREAMSTATE, true))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("already runs on " + OfflineConvert.STREAMSTATE);
    assertThat(listing(hdfs)).as("nothing written").isEqualTo(before);
  }

  /** Keys over both partitions, state carried across both conversions, late rows, expiry. */
  private static ClockedRun.Steps steps(Case c, java.util.function.IntConsumer convert) {
    ClockedRun.Steps steps = new ClockedRun.Steps();
    steps.data(0, ev("a", 100, 1), ev("b", 101, 2), ev("c", 102, 3), ev("d", 103, 4));
    if (c.inputs() > 1) {
      steps.data(1, ev("a", 101, 10), ev("c", 103, 11), ev("e", 100, 12));
    }
    steps.tick().data(0, ev("e", 104, 5), ev("f", 105, 6), ev("g", 106, 7), ev("a", 107, 8));
    if (c.inputs() > 1) {
      steps.data(1, ev("b", 102, 13), ev("g", 108, 14));
    }
    steps.tick().restart(() -> convert.accept(0));
    steps.data(0, ev("a", 108, 9), ev("h", 109, 10), ev("b", 112, 11), ev("c", 101, 12));
    if (c.inputs() > 1) {
      steps.data(1, ev("h", 110, 15), ev("a", 109, 16), ev("f", 104, 17));
    }
    steps.tick().restart(() -> convert.accept(1));
    steps.data(0, ev("d", 121, 13), ev("i", 125, 14), ev("a", 110, 15));
    if (c.inputs() > 1) {
      steps.data(1, ev("d", 122, 18), ev("i", 126, 19), ev("b", 113, 20));
    }
    steps.tick().data(0, ev("j", 140, 16));
    if (c.inputs() > 1) {
      steps.data(1, ev("j", 141, 21));
    }
    return steps.ticks(2);
  }

  private static final Pattern PROVIDER =
      Pattern.compile("\"spark.sql.streaming.stateStore.providerClass\":\"([^\"]+)\"");

  /** The provider class pinned in an offset log entry (plain file, Spark's format). */
  private static String pinnedProvider(Path checkpoint, long batch) {
    try {
      String entry = Files.readString(checkpoint.resolve("offsets").resolve(Long.toString(batch)));
      Matcher m = PROVIDER.matcher(entry);
      assertThat(m.find()).as("provider class in offsets/%s", batch).isTrue();
      return m.group(1);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Our snapshot files of {@code version} in a partition's stores (joins have four). */
  private static List<String> oursSnapshots(Path partition, long version) throws IOException {
    String prefix = String.format("%020d-", version);
    try (Stream<Path> files = Files.walk(partition)) {
      return files
          .filter(p -> p.getParent().getFileName().toString().equals("snapshot"))
          .map(p -> p.getFileName().toString())
          .filter(n -> n.startsWith(prefix) && n.endsWith(".snapshot"))
          .toList();
    }
  }

  /**
   * Spark's RocksDB provider's files of {@code version} in a partition's stores (zip or changelog,
   * with or without a checkpoint id).
   */
  private static List<String> rocksDbFiles(Path partition, long version) throws IOException {
    try (Stream<Path> files = Files.walk(partition)) {
      return files
          .map(p -> p.getFileName().toString())
          .filter(n -> n.matches(version + "(_[-0-9a-f]+)?\\.(zip|changelog)"))
          .toList();
    }
  }

  private static String listing(Path root) throws IOException {
    try (Stream<Path> files = Files.walk(root)) {
      return String.join("\n", files.map(p -> root.relativize(p).toString()).sorted().toList());
    }
  }
}
