package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.spark.OfflineRewriteCases.Case;
import io.streamstate.spark.repartition.OfflineConvert;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.sql.SparkSession;
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
        run.run(
                TestSessions.HDFS,
                work.resolve(c.name() + "-reference"),
                OfflineRewriteCases.steps(c, () -> {}, () -> {}))
            .rows();

    List<String> actual =
        run.run(
                firstProvider,
                checkpoint,
                OfflineRewriteCases.steps(
                    c,
                    () ->
                        conversions.add(OfflineConvert.run(spark, location, targets.get(0), true)),
                    () ->
                        conversions.add(OfflineConvert.run(spark, location, targets.get(1), true))),
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
    convertsAndResumes(OfflineRewriteCases.AGGREGATION, TestSessions.HDFS, Map.of());
  }

  @Test
  void windowedAggregationFromRocksDbWithChangelogUnderFormatV2() throws Exception {
    convertsAndResumes(
        OfflineRewriteCases.AGGREGATION.named("aggregation-v2"),
        ROCKSDB,
        Map.of(CHANGELOG, "true", FORMAT, "2"));
  }

  @Test
  void dropDuplicatesFromRocksDbWithChangelog() throws Exception {
    convertsAndResumes(OfflineRewriteCases.DEDUP, ROCKSDB, Map.of(CHANGELOG, "true"));
  }

  @Test
  void streamStreamJoinFromHdfsBacked() throws Exception {
    convertsAndResumes(OfflineRewriteCases.JOIN, TestSessions.HDFS, Map.of());
  }

  @Test
  void flatMapGroupsWithStateFromRocksDb() throws Exception {
    convertsAndResumes(
        OfflineRewriteCases.FLAT_MAP_GROUPS_WITH_STATE, ROCKSDB, Map.of(CHANGELOG, "false"));
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
