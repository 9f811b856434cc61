package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.window;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Spark's state data source on checkpoints of our provider, for every operator it reads
 * (aggregation, dedup, both sides of a stream-stream join, flatMapGroupsWithState): the same query
 * runs with our provider, with {@code HDFSBackedStateStoreProvider} and with {@code
 * RocksDBStateStoreProvider} (changelog checkpointing on), on the same deterministic input.
 *
 * <ul>
 *   <li>{@code format("statestore")} at the last batch and at earlier ones, and {@code
 *       format("state-metadata")}: ours equals the HDFS-backed provider's, row for row (sorted).
 *   <li>{@code readChangeFeed}: ours equals RocksDB's change feed reduced to the last record per
 *       partition, batch and key (our changelog holds one change per key and version, RocksDB's one
 *       per call: docs/protocol.md, "Change feed"); ours holds exactly one record per partition,
 *       batch and key.
 *   <li>{@code snapshotStartBatchId} + {@code snapshotPartitionId}: from our snapshot of a middle
 *       batch (our run waits until it has one) to the last batch, ours equals the HDFS-backed
 *       provider's partition at that batch. (Not compared with RocksDB's: its snapshots of a given
 *       version are uploaded by maintenance up to a minute later, which cost four minutes of
 *       waiting per build; the HDFS-backed provider's rows are the reference anyway.)
 * </ul>
 */
class StateDataSourceIT {
  static final Path work = TestSessions.newWorkDir(StateDataSourceIT.class);
  private static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  private static final List<String> JOIN_STORES =
      List.of(
          "left-keyToNumValues",
          "left-keyWithIndexToValue",
          "right-keyToNumValues",
          "right-keyWithIndexToValue");

  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark =
        TestSessions.start(
            "StateDataSourceIT",
            work,
            Map.of(
                "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled", "true",
                // Every provider may snapshot every version: the runs wait for one mid-way.
                "spark.sql.streaming.stateStore.minDeltasForSnapshot", "1"));
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
  }

  /** A query, its steps (a snapshot awaited after {@code snapshotAfterTick}), and its stores. */
  private record Case(
      String name,
      int inputs,
      Function<List<Dataset<Row>>, Dataset<Row>> query,
      OutputMode mode,
      Function<SnapshotWait, ClockedRun.Steps> steps,
      List<String> storeNames,
      List<Map<String, String>> stateReads) {}

  /** What one run of a case left: its checkpoint and the version whose snapshot it awaited. */
  private record Run(Path checkpoint, long snapshotVersion, long lastBatch) {}

  /**
   * A step that waits, in our run, until every store of partition 0 has a snapshot of the version
   * of the last batch (the other providers' runs do not wait: their rows are read by batch id).
   */
  private static final class SnapshotWait {
    final Path checkpoint;
    final String provider;
    final List<String> storeNames;
    final AtomicLong version = new AtomicLong(-1);

    SnapshotWait(Path checkpoint, String provider, List<String> storeNames) {
      this.checkpoint = checkpoint;
      this.provider = provider;
      this.storeNames = storeNames;
    }

    ClockedRun.Steps after(ClockedRun.Steps steps) {
      return steps.await(
          "a snapshot of the last batch's version in every store of partition 0",
          q -> {
            long v = q.lastProgress().batchId() + 1;
            version.set(v);
            return !provider.equals(TestSessions.OURS) || hasSnapshots(v);
          });
    }

    private boolean hasSnapshots(long version) throws IOException {
      Path partition = checkpoint.resolve("state/0/0");
      List<Path> stores = new ArrayList<>();
      if (storeNames.isEmpty()) {
        stores.add(partition);
      } else {
        storeNames.forEach(n -> stores.add(partition.resolve(n)));
      }
      for (Path store : stores) {
        if (!snapshotVersions(store).contains(version)) {
          return false;
        }
      }
      return true;
    }
  }

  /** Our manifests (snapshot/NNN...-id), RocksDB's N.zip, the HDFS-backed provider's N.snapshot. */
  private static final Pattern OURS = Pattern.compile("(\\d{20})-.*");

  private static final Pattern SPARKS = Pattern.compile("(\\d+)\\.(zip|snapshot)");

  static List<Long> snapshotVersions(Path store) throws IOException {
    List<Long> versions = new ArrayList<>();
    for (Path dir : List.of(store, store.resolve("snapshot"))) {
      if (!Files.isDirectory(dir)) {
        continue;
      }
      try (Stream<Path> files = Files.list(dir)) {
        for (Path f : (Iterable<Path>) files::iterator) {
          String name = f.getFileName().toString();
          var ours = OURS.matcher(name);
          var sparks = SPARKS.matcher(name);
          if (dir.endsWith("snapshot") && ours.matches()) {
            versions.add(Long.parseLong(ours.group(1)));
          } else if (sparks.matches()) {
            versions.add(Long.parseLong(sparks.group(1)));
          }
        }
      }
    }
    return versions;
  }

  private Run run(Case c, String provider) throws Exception {
    Path checkpoint =
        work.resolve(c.name() + "-" + provider.substring(provider.lastIndexOf('.') + 1));
    SnapshotWait wait = new SnapshotWait(checkpoint, provider, c.storeNames());
    ClockedRun.Result result =
        new ClockedRun(spark, c.inputs(), c.query(), c.mode())
            .run(provider, checkpoint, c.steps().apply(wait));
    assertThat(result.rows()).as("%s produced output", c.name()).isNotEmpty();
    long lastBatch = result.lastRunProgress().get(result.lastRunProgress().size() - 1).batchId();
    return new Run(checkpoint, wait.version.get(), lastBatch);
  }

  private static List<String> read(String format, Path checkpoint, Map<String, String> options) {
    DataFrameReader reader = spark.read().format(format);
    options.forEach(reader::option);
    List<String> rows = new ArrayList<>();
    for (Row r : reader.load(checkpoint.toString()).collectAsList()) {
      rows.add(r.toString());
    }
    return rows;
  }

  private static List<String> sorted(List<String> rows) {
    List<String> copy = new ArrayList<>(rows);
    copy.sort(null);
    return copy;
  }

  private static Map<String, String> with(Map<String, String> base, String... keyValues) {
    Map<String, String> m = new LinkedHashMap<>(base);
    for (int i = 0; i < keyValues.length; i += 2) {
      m.put(keyValues[i], keyValues[i + 1]);
    }
    return m;
  }

  /**
   * RocksDB's change feed rows reduced to the last record per partition, batch and key, in the
   * order read (batch_id, change_type, key, value, partition_id).
   */
  private static List<String> lastPerKey(List<Row> rows) {
    Map<String, String> last = new LinkedHashMap<>();
    for (Row r : rows) {
      last.put(r.get(4) + "/" + r.get(0) + "/" + r.get(2), r.toString());
    }
    return sorted(new ArrayList<>(last.values()));
  }

  private static List<Row> changeFeed(Path checkpoint, Map<String, String> options) {
    DataFrameReader reader = spark.read().format("statestore").option("readChangeFeed", "true");
    options.forEach(reader::option);
    return reader.load(checkpoint.toString()).collectAsList();
  }

  private void check(Case c) throws Exception {
    Run ours = run(c, TestSessions.OURS);
    Run hdfs = run(c, TestSessions.HDFS);
    Run rocks = run(c, ROCKSDB);
    assertThat(ours.lastBatch()).isEqualTo(hdfs.lastBatch()).isEqualTo(rocks.lastBatch());
    assertThat(ours.snapshotVersion()).isPositive();

    // The state at the last batch and at earlier ones, and the operators' metadata.
    for (Map<String, String> options : c.stateReads()) {
      for (long batch : new long[] {ours.lastBatch(), ours.snapshotVersion() - 1}) {
        Map<String, String> at = with(options, "batchId", String.valueOf(batch));
        List<String> expected = sorted(read("statestore", hdfs.checkpoint(), at));
        assertThat(sorted(read("statestore", ours.checkpoint(), at)))
            .as("%s: statestore %s", c.name(), at)
            .isEqualTo(expected);
        if (batch == ours.lastBatch()) {
          assertThat(expected).as("%s: state at the last batch", c.name()).isNotEmpty();
        }
      }
      // From the snapshot of the awaited version, in partition 0.
      long snapshotBatch = ours.snapshotVersion() - 1;
      Map<String, String> fromSnapshot =
          with(
              options,
              "snapshotStartBatchId",
              String.valueOf(snapshotBatch),
              "snapshotPartitionId",
              "0",
              "batchId",
              String.valueOf(ours.lastBatch()));
      List<String> fromOurs = sorted(read("statestore", ours.checkpoint(), fromSnapshot));
      List<String> hdfsPartition0 = new ArrayList<>();
      for (Row r :
          readFrame(hdfs.checkpoint(), with(options, "batchId", String.valueOf(ours.lastBatch())))
              .filter(col("partition_id").equalTo(0))
              .collectAsList()) {
        hdfsPartition0.add(r.toString());
      }
      assertThat(fromOurs)
          .as("%s: statestore %s", c.name(), fromSnapshot)
          .isEqualTo(sorted(hdfsPartition0));
    }
    assertThat(sorted(read("state-metadata", ours.checkpoint(), Map.of())))
        .as("%s: state-metadata", c.name())
        .isEqualTo(sorted(read("state-metadata", hdfs.checkpoint(), Map.of())))
        .isNotEmpty();

    // The change feed, over every batch and over a middle range, store by store.
    List<Map<String, String>> feeds = new ArrayList<>();
    if (c.storeNames().isEmpty()) {
      feeds.add(Map.of());
    } else {
      c.storeNames().forEach(n -> feeds.add(Map.of("storeName", n)));
    }
    for (Map<String, String> store : feeds) {
      for (Map<String, String> range :
          List.of(
              Map.of("changeStartBatchId", "0"),
              Map.of(
                  "changeStartBatchId",
                  "2",
                  "changeEndBatchId",
                  String.valueOf(ours.lastBatch() - 1)))) {
        Map<String, String> options = new TreeMap<>(store);
        options.putAll(range);
        List<Row> ourFeed = changeFeed(ours.checkpoint(), options);
        List<String> ourRows = new ArrayList<>();
        ourFeed.forEach(r -> ourRows.add(r.toString()));
        assertThat(lastPerKey(ourFeed))
            .as(
                "%s: our change feed %s has one record per partition, batch and key",
                c.name(), options)
            .hasSameSizeAs(ourRows);
        assertThat(sorted(ourRows))
            .as("%s: change feed %s", c.name(), options)
            .isNotEmpty()
            .isEqualTo(lastPerKey(changeFeed(rocks.checkpoint(), options)));
      }
    }
  }

  private static Dataset<Row> readFrame(Path checkpoint, Map<String, String> options) {
    DataFrameReader reader = spark.read().format("statestore");
    options.forEach(reader::option);
    return reader.load(checkpoint.toString());
  }

  // ---------------------------------------------------------------------------------------------

  @Test
  void windowedAggregation() throws Exception {
    check(
        new Case(
            "aggregation",
            1,
            in ->
                in.get(0)
                    .withWatermark("ts", "10 seconds")
                    .groupBy(window(col("ts"), "10 seconds"), col("key"))
                    .agg(count(lit(1)).as("n"), sum("value").as("total")),
            OutputMode.Update(),
            wait ->
                wait.after(
                        new ClockedRun.Steps()
                            .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 105, 3))
                            .tick()
                            .data(0, ev("a", 112, 4), ev("c", 115, 5), ev("a", 101, 1))
                            .tick())
                    .restart()
                    .data(0, ev("b", 108, 6), ev("a", 125, 7))
                    .tick()
                    .tick()
                    .data(0, ev("c", 121, 9), ev("d", 140, 1), ev("a", 126, 2))
                    .ticks(2),
            List.of(),
            List.of(Map.of())));
  }

  @Test
  void dropDuplicates() throws Exception {
    check(
        new Case(
            "dedup",
            1,
            in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicates("key", "ts"),
            OutputMode.Append(),
            wait ->
                wait.after(
                        new ClockedRun.Steps()
                            .data(0, ev("a", 100, 1), ev("a", 100, 2), ev("b", 101, 3))
                            .tick()
                            .data(0, ev("a", 100, 5), ev("b", 102, 6), ev("c", 111, 7))
                            .tick())
                    .restart()
                    .data(0, ev("a", 104, 8), ev("c", 111, 9), ev("d", 125, 10))
                    .tick()
                    .tick()
                    .data(0, ev("b", 118, 12), ev("e", 160, 15))
                    .ticks(2),
            List.of(),
            List.of(Map.of())));
  }

  @Test
  void streamStreamJoinBothSides() throws Exception {
    check(
        new Case(
            "join",
            2,
            in -> StreamStreamJoinIT.joined(in, "left_outer"),
            OutputMode.Append(),
            wait ->
                wait.after(
                        new ClockedRun.Steps()
                            .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 102, 3))
                            .data(1, ev("a", 103, 10), ev("c", 100, 11))
                            .tick()
                            .data(0, ev("c", 104, 4), ev("d", 110, 5), ev("a", 104, 6))
                            .data(1, ev("a", 99, 12), ev("b", 120, 13), ev("d", 112, 14))
                            .tick())
                    .restart()
                    .data(0, ev("e", 130, 6), ev("a", 131, 7))
                    .data(1, ev("a", 133, 15), ev("e", 129, 16), ev("f", 131, 17))
                    .tick()
                    .tick()
                    .data(0, ev("b", 121, 8), ev("g", 150, 9))
                    .data(1, ev("g", 151, 18), ev("h", 149, 19))
                    .ticks(2),
            JOIN_STORES,
            List.of(Map.of("joinSide", "left"), Map.of("joinSide", "right"))));
  }

  @Test
  void flatMapGroupsWithStateWithEventTimeTimeouts() throws Exception {
    check(
        new Case(
            "fmgws",
            1,
            in ->
                in.get(0)
                    .withWatermark("ts", "10 seconds")
                    .groupByKey(
                        (org.apache.spark.api.java.function.MapFunction<Row, String>)
                            r -> r.getString(0),
                        org.apache.spark.sql.Encoders.STRING())
                    .flatMapGroupsWithState(
                        new FlatMapGroupsWithStateIT.EventTimeSummer(),
                        OutputMode.Update(),
                        org.apache.spark.sql.Encoders.LONG(),
                        org.apache.spark.sql.Encoders.STRING(),
                        GroupStateTimeout.EventTimeTimeout())
                    .toDF(),
            OutputMode.Update(),
            wait ->
                wait.after(
                        new ClockedRun.Steps()
                            .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 103, 3))
                            .tick()
                            .data(0, ev("c", 110, 4), ev("a", 112, 5))
                            .tick())
                    .restart()
                    .data(0, ev("d", 130, 6))
                    .tick()
                    .tick()
                    .data(0, ev("e", 150, 7), ev("d", 131, 8))
                    .ticks(2),
            List.of(),
            List.of(Map.of())));
  }
}
