package io.streamstate.spark.reliability;

import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.explode;
import static org.apache.spark.sql.functions.sum;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.streamstate.spark.StreamStateConf;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.spark.api.java.function.VoidFunction2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.unsafe.Platform;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A batch re-run after its state committed, whose state bytes differ from the first run's: a sum of
 * doubles (addition order decides the result) and a stream-stream join with several values per key
 * (the order of each key's value list), under checkpoint formats v1 and v2.
 *
 * <p>Each query runs batches 0 and 1, then stops, and a new run does batch 2. Every task of batch 1
 * that holds state fails once after its commit ({@link AttemptOrder}), so two commits of version 2
 * of each such store exist on storage, and the retry read its input in the other order. The test
 * reads both commits through the engine's readers ({@link StoredCommits}) and asserts that they
 * differ, which one is the retry's (by content, against a plain-Java model of each order), that
 * version 3, which the new run built on version 2 loaded from storage, names the retry's commit as
 * its parent, and (format v2) that Spark's commit log entry of batch 1 names exactly that commit.
 * The sink's output must equal the model with the retry's order in batch 1, and differ from the
 * model with the failed attempt's order, so that following the wrong commit could not pass.
 */
class RerunThatDiffersIT {
  private static final long FAULTED_BATCH = 1;
  private static final int FIRST_RUN_BATCHES = 2;
  private static final int BATCHES = 3;
  private static final int PARTITIONS = 2;

  /** The version batch 1 commits: batch {@code b} commits version {@code b + 1}. */
  private static final long RERUN_VERSION = FAULTED_BATCH + 1;

  /** 2^53: adding 1 to it is lost to rounding, adding 1 to -2^53 is not. */
  private static final double BIG = 9007199254740992.0;

  static final Path work = Sessions.newWorkDir(RerunThatDiffersIT.class);
  private static SparkSession spark;

  /** The sink: each batch's lines, replaced if the batch runs again. */
  private static final Map<String, List<String>> OUTPUT = new ConcurrentHashMap<>();

  @BeforeAll
  static void startSpark() {
    spark =
        ReliabilityQuery.start(
            "RerunThatDiffersIT", "local[2,4]", ReliabilityQuery.sessionConf(work));
    AttemptOrder.register(spark);
    spark.conf().set(ReliabilityQuery.PROVIDER_CLASS, ReliabilityQuery.OURS);
  }

  @AfterAll
  static void stopSpark() {
    if (spark != null) {
      spark.stop();
    }
  }

  // ---- the double sum ----

  private static final StructType READINGS =
      new StructType()
          .add("key", DataTypes.StringType)
          .add("readings", DataTypes.createArrayType(DataTypes.DoubleType, false));

  /** Batch {@code b}'s rows: one per key, its readings in the order the file holds them. */
  private static Map<String, List<Double>> readings(int batch) {
    Map<String, List<Double>> rows = new TreeMap<>();
    for (int i = 1; i <= 6; i++) {
      double n = i;
      rows.put(
          "k" + i,
          switch (batch) {
            case 0 -> List.of(0.5, 0.25, n);
            // As given: 2^53 swallows both 1s; reversed, -2^53 does not. The sums differ by 2.
            case 1 -> List.of(BIG, 1.0, 1.0, -BIG, n);
            default -> List.of(0.5, 0.125, n);
          });
    }
    return rows;
  }

  @ParameterizedTest(name = "checkpoint format v{0}")
  @ValueSource(ints = {1, 2})
  void doubleSumRerunAfterCommitFollowsTheRetrysCommit(int format) throws Exception {
    Path dir = work.resolve("sum-v" + format);
    Path input = Files.createDirectories(dir.resolve("in"));
    Dataset<Row> query =
        spark
            .readStream()
            .schema(READINGS)
            .option("maxFilesPerTrigger", 1)
            .json(input.toString())
            // The shuffle the aggregation needs, made here so that the reorder runs in the task
            // that commits the state (Spark adds no other exchange).
            .repartition(PARTITIONS, col("key"))
            .select(
                col("key"),
                explode(call_function(AttemptOrder.DOUBLES, col("readings"))).as("reading"))
            .groupBy("key")
            .agg(sum("reading").as("total"));

    Map<String, List<String>> output =
        runTwice(
            dir,
            format,
            b -> {
              List<String> lines = new ArrayList<>();
              readings(b).forEach((k, v) -> lines.add(json("key", k, "readings", v)));
              writeBatchFile(input, b, lines);
            },
            query,
            ds ->
                sorted(ds.collectAsList().stream().map(r -> r.getString(0) + "," + r.getDouble(1))),
            OutputMode.Update());

    Map<String, List<String>> winner = sumModel(1);
    Map<String, List<String>> loser = sumModel(0);
    assertThat(winner).as("the two orders give other sums").isNotEqualTo(loser);
    assertThat(output).isEqualTo(winner);

    // On disk: per partition, two commits of version 2 with other sums; the retry's is the one
    // version 3 and (v2) Spark's commit log build on.
    Map<String, Double> retryState = sumState(1);
    Map<String, Double> firstState = sumState(0);
    // (Both partitions hold keys of batch 1: Spark's hash of k1..k6 spreads them.)
    for (int p = 0; p < PARTITIONS; p++) {
      String store = "0/" + p + "/";
      List<StoredCommits.Commit> commits = stored(dir, store, RERUN_VERSION);
      StoredCommits.Commit retry = only(commits, c -> retryState.entrySet().containsAll(sums(c)));
      StoredCommits.Commit first = only(commits, c -> firstState.entrySet().containsAll(sums(c)));
      assertRerunFollowed(dir, format, store, commits, retry, first);
    }
  }

  /** What the sink gets: per batch, each updated key's total, as Spark sums the readings. */
  private static Map<String, List<String>> sumModel(int faultedBatchWinner) {
    Map<String, Double> totals = new TreeMap<>();
    Map<String, List<String>> out = new TreeMap<>();
    for (int b = 0; b < BATCHES; b++) {
      List<String> batch = new ArrayList<>();
      for (var e : readings(b).entrySet()) {
        double total = addAll(totals.get(e.getKey()), e.getValue(), attempt(b, faultedBatchWinner));
        totals.put(e.getKey(), total);
        batch.add(e.getKey() + "," + total);
      }
      batch.sort(null);
      out.put(batchName(b), batch);
    }
    return out;
  }

  /** Each key's total after the faulted batch, when the attempt {@code winner} read it. */
  private static Map<String, Double> sumState(int winner) {
    Map<String, Double> totals = new TreeMap<>();
    for (int b = 0; b <= FAULTED_BATCH; b++) {
      for (var e : readings(b).entrySet()) {
        totals.put(e.getKey(), addAll(totals.get(e.getKey()), e.getValue(), attempt(b, winner)));
      }
    }
    return totals;
  }

  /**
   * Spark's sum of doubles: the task's partial sum, in the order it reads the values (from 0), then
   * added to the stored total.
   */
  private static double addAll(Double stored, List<Double> values, int attempt) {
    double partial = 0.0;
    for (double v : AttemptOrder.order(values, attempt)) {
      partial += v;
    }
    return stored == null ? partial : stored + partial;
  }

  /**
   * The totals a commit of the aggregation writes: its puts, decoded. Keys and values are Spark's
   * rows behind a one-byte encoding version ({@code ColumnFamilyCodec}; key: the grouping key,
   * value: the sum).
   */
  private static Set<Map.Entry<String, Double>> sums(StoredCommits.Commit commit) {
    Set<Map.Entry<String, Double>> found = new HashSet<>();
    for (var family : commit.changelog().changes()) {
      if (!family.family().equals(SPARK_ROWS)) {
        continue;
      }
      for (var change : family.changes()) {
        if (!change.isDelete()) {
          found.add(
              Map.entry(
                  row(change.key(), 1).getUTF8String(0).toString(),
                  row(change.value(), 1).getDouble(0)));
        }
      }
    }
    assertThat(found).as("totals in %s", commit).isNotEmpty();
    return found;
  }

  // ---- the join ----

  private static final StructType LEFT =
      new StructType()
          .add("key", DataTypes.StringType)
          .add("vals", DataTypes.createArrayType(DataTypes.LongType, false));
  private static final StructType RIGHT =
      new StructType().add("rkey", DataTypes.StringType).add("rval", DataTypes.LongType);

  /** Batch {@code b}'s left rows: one per key, several values each. */
  private static Map<String, List<Long>> leftRows(int batch) {
    Map<String, List<Long>> rows = new TreeMap<>();
    for (int i = 1; i <= 4; i++) {
      long base = batch * 1000L + i * 100L;
      rows.put("k" + i, List.of(base + 1, base + 2, base + 3));
    }
    return rows;
  }

  /** Batch {@code b}'s right rows: (key, value), values unique over the run. */
  private static List<Map.Entry<String, Long>> rightRows(int batch) {
    List<Map.Entry<String, Long>> rows = new ArrayList<>();
    for (int i = 1; i <= 4; i++) {
      rows.add(Map.entry("k" + i, -(batch * 10L + i)));
    }
    return rows;
  }

  @ParameterizedTest(name = "checkpoint format v{0}")
  @ValueSource(ints = {1, 2})
  void joinValueListsRerunAfterCommitFollowTheRetrysCommit(int format) throws Exception {
    Path dir = work.resolve("join-v" + format);
    Path left = Files.createDirectories(dir.resolve("in/left"));
    Path right = Files.createDirectories(dir.resolve("in/right"));
    Dataset<Row> query =
        spark
            .readStream()
            .schema(LEFT)
            .option("maxFilesPerTrigger", 1)
            .json(left.toString())
            .repartition(PARTITIONS, col("key"))
            .select(col("key"), explode(call_function(AttemptOrder.LONGS, col("vals"))).as("lval"))
            .join(
                spark
                    .readStream()
                    .schema(RIGHT)
                    .option("maxFilesPerTrigger", 1)
                    .json(right.toString()),
                col("key").equalTo(col("rkey")))
            .select(col("key"), col("lval"), col("rval"));

    Map<String, List<String>> output =
        runTwice(
            dir,
            format,
            b -> {
              List<String> lefts = new ArrayList<>();
              leftRows(b).forEach((k, v) -> lefts.add(json("key", k, "vals", v)));
              writeBatchFile(left, b, lefts);
              List<String> rights = new ArrayList<>();
              rightRows(b).forEach(e -> rights.add(json("rkey", e.getKey(), "rval", e.getValue())));
              writeBatchFile(right, b, rights);
            },
            query,
            RerunThatDiffersIT::joinedInEmittedOrder,
            OutputMode.Append());

    Map<String, List<String>> winner = joinModel(1);
    Map<String, List<String>> loser = joinModel(0);
    assertThat(winner).as("the two orders give other output orders").isNotEqualTo(loser);
    assertThat(output).isEqualTo(winner);

    Map<String, List<Long>> retryLists = leftLists(1);
    Map<String, List<Long>> firstLists = leftLists(0);
    // (Both partitions hold keys of batch 1: Spark's hash of k1..k4 spreads them.)
    for (int p = 0; p < PARTITIONS; p++) {
      String store = "0/" + p + "/left-keyWithIndexToValue/";
      List<StoredCommits.Commit> commits = stored(dir, store, RERUN_VERSION);
      StoredCommits.Commit retry = only(commits, c -> holdsListOrder(c, retryLists));
      StoredCommits.Commit first = only(commits, c -> holdsListOrder(c, firstLists));
      assertRerunFollowed(dir, format, store, commits, retry, first);
      // The right side read its rows in one order in both attempts: same changes, other ids.
      List<StoredCommits.Commit> rights =
          stored(dir, "0/" + p + "/right-keyWithIndexToValue/", RERUN_VERSION);
      assertThat(rights).hasSize(2);
      assertThat(rights.get(0).sameChangesAs(rights.get(1))).as("%s", rights).isTrue();
    }
  }

  /**
   * What the sink gets, per batch and right value: the left values it was joined with, in the order
   * the join emitted them. A new left value is joined with the key's right values; a new right
   * value with the key's left value list, in list order (the order the batch that added them read
   * them).
   */
  private static Map<String, List<String>> joinModel(int faultedBatchWinner) {
    Map<String, List<Long>> leftState = new TreeMap<>();
    Map<String, List<Long>> rightState = new TreeMap<>();
    Map<String, List<String>> out = new TreeMap<>();
    for (int b = 0; b < BATCHES; b++) {
      Map<Long, String> keyOf = new TreeMap<>();
      Map<Long, List<Long>> joined = new TreeMap<>();
      for (var e : leftRows(b).entrySet()) {
        for (long l : AttemptOrder.order(e.getValue(), attempt(b, faultedBatchWinner))) {
          for (long r : rightState.getOrDefault(e.getKey(), List.of())) {
            keyOf.put(r, e.getKey());
            joined.computeIfAbsent(r, x -> new ArrayList<>()).add(l);
          }
          leftState.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(l);
        }
      }
      for (var e : rightRows(b)) {
        rightState.computeIfAbsent(e.getKey(), k -> new ArrayList<>()).add(e.getValue());
        keyOf.put(e.getValue(), e.getKey());
        joined
            .computeIfAbsent(e.getValue(), x -> new ArrayList<>())
            .addAll(leftState.getOrDefault(e.getKey(), List.of()));
      }
      List<String> batch = new ArrayList<>();
      joined.forEach((r, ls) -> batch.add(joinLine(keyOf.get(r), r, ls)));
      batch.sort(null);
      out.put(batchName(b), batch);
    }
    return out;
  }

  /** Each key's left value list after the faulted batch, when attempt {@code winner} read it. */
  private static Map<String, List<Long>> leftLists(int winner) {
    Map<String, List<Long>> lists = new TreeMap<>();
    for (int b = 0; b <= FAULTED_BATCH; b++) {
      for (var e : leftRows(b).entrySet()) {
        lists
            .computeIfAbsent(e.getKey(), k -> new ArrayList<>())
            .addAll(AttemptOrder.order(e.getValue(), attempt(b, winner)));
      }
    }
    return lists;
  }

  /**
   * Whether every value a commit of a left value store puts sits where {@code lists} has it: key
   * {@code (key, index)}, value {@code (key, lval, matched)}, Spark's rows behind a one-byte
   * encoding version.
   */
  private static boolean holdsListOrder(
      StoredCommits.Commit commit, Map<String, List<Long>> lists) {
    int puts = 0;
    for (var family : commit.changelog().changes()) {
      if (!family.family().equals(SPARK_ROWS)) {
        continue;
      }
      for (var change : family.changes()) {
        if (change.isDelete()) {
          continue;
        }
        UnsafeRow key = row(change.key(), 2);
        UnsafeRow value = row(change.value(), 3);
        String k = key.getUTF8String(0).toString();
        int index = (int) key.getLong(1);
        List<Long> list = lists.getOrDefault(k, List.of());
        if (index >= list.size() || list.get(index) != value.getLong(1)) {
          return false;
        }
        puts++;
      }
    }
    return puts > 0;
  }

  /** The sink's lines of a join batch: per right value, the left values in emitted order. */
  private static List<String> joinedInEmittedOrder(Dataset<Row> batch) {
    Map<Long, String> keyOf = new TreeMap<>();
    Map<Long, List<Long>> joined = new LinkedHashMap<>();
    for (Row r : batch.collectAsList()) {
      keyOf.put(r.getLong(2), r.getString(0));
      joined.computeIfAbsent(r.getLong(2), x -> new ArrayList<>()).add(r.getLong(1));
    }
    return sorted(
        joined.entrySet().stream()
            .map(e -> joinLine(keyOf.get(e.getKey()), e.getKey(), e.getValue())));
  }

  private static List<String> sorted(java.util.stream.Stream<String> lines) {
    return lines.sorted().toList();
  }

  private static String joinLine(String key, long rval, List<Long> lvals) {
    StringBuilder line = new StringBuilder(key + "," + rval + ":");
    lvals.forEach(l -> line.append(' ').append(l));
    return line.toString();
  }

  // ---- shared ----

  /**
   * Asserts that {@code retry} and {@code first}, the two commits of version 2 of {@code store},
   * differ in their changes and not in their parent, that version 3 (made by the second run, after
   * a restart) is built on {@code retry}, and under format v2 that Spark's commit log entry of the
   * faulted batch names {@code retry} and not {@code first}.
   */
  private static void assertRerunFollowed(
      Path dir,
      int format,
      String store,
      List<StoredCommits.Commit> commits,
      StoredCommits.Commit retry,
      StoredCommits.Commit first) {
    assertThat(commits).as("commits of version 2 of %s", store).hasSize(2);
    assertThat(retry.commitId()).isNotEqualTo(first.commitId());
    assertThat(retry.sameChangesAs(first))
        .as("the two commits of version 2 of %s make the same changes: %s", store, commits)
        .isFalse();
    assertThat(retry.parentId()).isEqualTo(first.parentId());
    List<StoredCommits.Commit> next = stored(dir, store, RERUN_VERSION + 1);
    assertThat(next).as("commits of version 3 of %s", store).hasSize(1);
    assertThat(next.get(0).parentId())
        .as("parent of version 3 of %s (the retry's commit %s, not %s)", store, retry, first)
        .isEqualTo(retry.commitId());
    if (format == 2) {
      assertThat(commitLogIds(dir.resolve("cp"), FAULTED_BATCH))
          .as("ids Spark's commit log recorded for batch %d", FAULTED_BATCH)
          .contains(retry.id())
          .doesNotContain(first.id());
    }
  }

  /** Writes the input files of one batch (numbered from 0). */
  @FunctionalInterface
  private interface BatchWriter {
    void write(int batch) throws IOException;
  }

  /**
   * Runs the query on {@code dir}/cp twice: batches 0 to 1 (the faulted batch last), then a new
   * run, on a checkpoint loaded from storage, to the end. Returns the sink's output per batch.
   */
  private static Map<String, List<String>> runTwice(
      Path dir,
      int format,
      BatchWriter input,
      Dataset<Row> query,
      Function<Dataset<Row>, List<String>> sink,
      OutputMode mode)
      throws Exception {
    for (int run = 0; run < 2; run++) {
      for (int b = run == 0 ? 0 : FIRST_RUN_BATCHES;
          b < (run == 0 ? FIRST_RUN_BATCHES : BATCHES);
          b++) {
        input.write(b);
      }
      runUntilDone(
          dir,
          format,
          query,
          (ds, id) -> OUTPUT.put(dir + "/" + batchName(id), sink.apply(ds)),
          mode);
    }
    Map<String, List<String>> out = new TreeMap<>();
    OUTPUT.forEach(
        (k, v) -> {
          if (k.startsWith(dir + "/")) {
            out.put(k.substring(dir.toString().length() + 1), v);
          }
        });
    return out;
  }

  /** One run of the query on its checkpoint: all available input, then stop. */
  private static void runUntilDone(
      Path dir,
      int format,
      Dataset<Row> query,
      VoidFunction2<Dataset<Row>, Long> sink,
      OutputMode mode)
      throws Exception {
    spark.conf().set(StreamStateConf.SPARK_CHECKPOINT_FORMAT_VERSION, String.valueOf(format));
    AttemptOrder.failAfterCommitInBatch = FAULTED_BATCH;
    try {
      StreamingQuery q =
          query
              .writeStream()
              .outputMode(mode)
              .option("checkpointLocation", dir.resolve("cp").toUri().toString())
              .foreachBatch(sink)
              .start();
      try {
        q.processAllAvailable();
      } finally {
        q.stop();
      }
    } finally {
      AttemptOrder.failAfterCommitInBatch = -1;
      spark.conf().unset(StreamStateConf.SPARK_CHECKPOINT_FORMAT_VERSION);
    }
  }

  /** The attempt whose reading of batch {@code b} counts: the retry in the faulted batch. */
  private static int attempt(int batch, int faultedBatchWinner) {
    return batch == FAULTED_BATCH ? faultedBatchWinner : 0;
  }

  private static String batchName(long batch) {
    return String.format("batch-%02d", batch);
  }

  private static List<StoredCommits.Commit> stored(Path dir, String store, long version) {
    return StoredCommits.of(dir.resolve("cp/state"), store, version);
  }

  private static StoredCommits.Commit only(
      List<StoredCommits.Commit> commits, java.util.function.Predicate<StoredCommits.Commit> p) {
    List<StoredCommits.Commit> matching = commits.stream().filter(p).toList();
    assertThat(matching).as("commits matching the model among %s", commits).hasSize(1);
    return matching.get(0);
  }

  /** Every state checkpoint id the commit log entry of {@code batch} records (format v2). */
  private static List<String> commitLogIds(Path checkpoint, long batch) {
    try {
      List<String> lines =
          Files.readAllLines(checkpoint.resolve("commits").resolve(String.valueOf(batch)));
      JsonNode ids = new ObjectMapper().readTree(lines.get(1)).get("stateUniqueIds");
      assertThat(ids).as("stateUniqueIds in commits/%d: %s", batch, lines).isNotNull();
      List<String> all = new ArrayList<>();
      ids.forEach(op -> op.forEach(part -> part.forEach(id -> all.add(id.asText()))));
      return all;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The column family of a store's rows (the others are the provider's own bookkeeping). */
  private static final String SPARK_ROWS = "default";

  /** A Spark row stored behind a one-byte encoding version. */
  private static UnsafeRow row(byte[] stored, int fields) {
    assertThat(stored[0]).as("encoding version byte").isZero();
    UnsafeRow row = new UnsafeRow(fields);
    row.pointTo(stored, Platform.BYTE_ARRAY_OFFSET + 1, stored.length - 1);
    return row;
  }

  private static String json(String k1, String v1, String k2, List<?> v2) {
    return "{\"" + k1 + "\":\"" + v1 + "\",\"" + k2 + "\":" + v2 + "}";
  }

  private static String json(String k1, String v1, String k2, long v2) {
    return "{\"" + k1 + "\":\"" + v1 + "\",\"" + k2 + "\":" + v2 + "}";
  }

  private static void writeBatchFile(Path dir, int batch, List<String> lines) throws IOException {
    Path file = dir.resolve(String.format("part-%05d.json", batch));
    Files.write(file, lines, StandardCharsets.UTF_8);
    // The file source takes files oldest first: make the order explicit.
    Files.setLastModifiedTime(file, FileTime.fromMillis(1_700_000_000_000L + batch * 1000L));
  }
}
