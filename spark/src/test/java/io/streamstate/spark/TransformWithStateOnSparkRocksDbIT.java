package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import io.streamstate.spark.shared.HedgeCounters;
import java.sql.Timestamp;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.ExpiredTimerInfo;
import org.apache.spark.sql.streaming.ListState;
import org.apache.spark.sql.streaming.MapState;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.StatefulProcessor;
import org.apache.spark.sql.streaming.TTLConfig;
import org.apache.spark.sql.streaming.TimeMode;
import org.apache.spark.sql.streaming.TimerValues;
import org.apache.spark.sql.streaming.ValueState;
import org.awaitility.core.ConditionTimeoutException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * {@code transformWithState} the way Spark 4.2 runs it, on its own {@code
 * RocksDBStateStoreProvider} (changelog checkpointing on), with our checkpoint file manager and its
 * checkpoint on HDFS (a MiniDFSCluster): value, list and map state, with event-time timers in one
 * query and, since Spark allows TTL only in processing-time mode, TTL and processing-time timers in
 * a second; a restart in the middle of each. The same query with Spark's default checkpoint file
 * manager on the same cluster is the reference: same rows; ours makes no rename RPC at the NameNode
 * (asserted), the reference's renames are printed.
 */
class TransformWithStateOnSparkRocksDbIT {
  static final java.nio.file.Path work =
      TestSessions.newWorkDir(TransformWithStateOnSparkRocksDbIT.class);
  static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  static final String CFM_KEY = "spark.sql.streaming.checkpointFileManagerClass";
  static final String CHANGELOG =
      "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled";

  private static final Map<String, String> CLIENT_SETTINGS =
      Map.of(
          "dfs.replication", "1",
          "dfs.client.block.write.locateFollowingBlock.initial.delay.ms", "20");

  private static MiniDfsFixture dfs;
  private static SparkSession spark;

  @BeforeAll
  static void start() throws Exception {
    dfs = MiniDfsFixture.start(work.resolve("dfs"));
    Map<String, String> extra = new HashMap<>();
    CLIENT_SETTINGS.forEach((k, v) -> extra.put("spark.hadoop." + k, v));
    extra.put(CHANGELOG, "true");
    spark = TestSessions.start("TransformWithStateOnSparkRocksDbIT", work, extra);
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

  /**
   * Per key: a count (value state), the values seen (list state), the latest value (value state), a
   * count per parity (map state); one timer, which reports and clears it all. In event-time mode
   * the timer is at the key's newest event + 5 s and nothing expires by TTL (Spark refuses TTL
   * there); in processing-time mode the timer is 4 s after the key's last batch, and the list, the
   * latest value and the map entries live 2 s (TTL). Each row says how many of the counted values
   * the TTL dropped.
   */
  static final class TtlTracker extends StatefulProcessor<String, Row, String> {
    private final boolean processingTime;
    private transient ValueState<Long> count;
    private transient ValueState<Integer> latest;
    private transient ListState<Integer> values;
    private transient MapState<String, Long> parities;

    TtlTracker(boolean processingTime) {
      this.processingTime = processingTime;
    }

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      TTLConfig ttl = processingTime ? new TTLConfig(Duration.ofSeconds(2)) : TTLConfig.NONE();
      count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
      latest = getHandle().getValueState("latest", Encoders.INT(), ttl);
      values = getHandle().getListState("values", Encoders.INT(), ttl);
      parities = getHandle().getMapState("parities", Encoders.STRING(), Encoders.LONG(), ttl);
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(
        String key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      String before = describe();
      long n = count.exists() ? count.get() : 0;
      long newest = Long.MIN_VALUE;
      while (rows.hasNext()) {
        Row r = rows.next();
        int value = r.getInt(2);
        n++;
        values.appendValue(value);
        latest.update(value);
        String parity = value % 2 == 0 ? "even" : "odd";
        parities.updateValue(
            parity, (parities.containsKey(parity) ? parities.getValue(parity) : 0) + 1);
        newest = Math.max(newest, r.<Timestamp>getAs(1).getTime());
      }
      count.update(n);
      scala.collection.Iterator<Object> timers = getHandle().listTimers();
      List<Long> old = new ArrayList<>();
      while (timers.hasNext()) {
        old.add((Long) timers.next());
      }
      old.forEach(getHandle()::deleteTimer);
      long timer =
          processingTime ? timerValues.getCurrentProcessingTimeInMs() + 4000 : newest + 5000;
      getHandle().registerTimer(timer);
      return one(
          key
              + " at "
              + timerValues.getCurrentProcessingTimeInMs()
              + " before: "
              + before
              + " after: "
              + describe()
              + " timer="
              + timer
              + " replaced="
              + old);
    }

    @Override
    public scala.collection.Iterator<String> handleExpiredTimer(
        String key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
      String line =
          key
              + " expired at "
              + expiredTimerInfo.getExpiryTimeInMs()
              + (processingTime ? "" : " (watermark " + timerValues.getCurrentWatermarkInMs() + ")")
              + " "
              + describe();
      count.clear();
      latest.clear();
      values.clear();
      parities.clear();
      return one(line);
    }

    private String describe() {
      List<Integer> seen = new ArrayList<>();
      values.get().foreach(v -> seen.add(v));
      Map<String, Long> byParity = new TreeMap<>();
      scala.collection.Iterator<Tuple2<String, Long>> entries = parities.iterator();
      while (entries.hasNext()) {
        Tuple2<String, Long> e = entries.next();
        byParity.put(e._1(), e._2());
      }
      long counted = count.exists() ? count.get() : 0;
      return "count="
          + counted
          + " latest="
          + (latest.exists() ? latest.get() : "-")
          + " values="
          + seen
          + " parities="
          + byParity
          + " ttlDropped="
          + (counted - seen.size());
    }

    private static scala.collection.Iterator<String> one(String line) {
      return ScalaInterop.iterator(List.of(line).iterator());
    }
  }

  private static ClockedRun query(boolean processingTime) {
    return new ClockedRun(
        spark,
        1,
        in -> {
          var input = processingTime ? in.get(0) : in.get(0).withWatermark("ts", "2 seconds");
          return input
              .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
              .transformWithState(
                  new TtlTracker(processingTime),
                  processingTime ? TimeMode.ProcessingTime() : TimeMode.EventTime(),
                  OutputMode.Update(),
                  Encoders.STRING())
              .toDF();
        },
        OutputMode.Update());
  }

  private static ClockedRun.Steps steps() {
    return new ClockedRun.Steps()
        .data(0, ev("a", 1, 1), ev("b", 2, 2), ev("a", 2, 4))
        .tick()
        .data(0, ev("b", 3, 3))
        .tick()
        .ticks(2) // processing time passes: a's first values outlive their TTL (2 s)
        .data(0, ev("a", 3, 5), ev("b", 4, 7), ev("c", 5, 8))
        .tick()
        .restart()
        .data(0, ev("c", 6, 9), ev("d", 20, 10)) // watermark 18 s: a, b and c expire
        .tick()
        .tick()
        .data(0, ev("b", 21, 11), ev("d", 22, 12))
        .tick()
        .data(0, ev("e", 40, 13)) // watermark 38 s: b and d expire
        .ticks(6);
  }

  /** Both queries, each on a checkpoint of its own under {@code base}; rows of both. */
  private static List<ClockedRun.Result> runBoth(String base, Map<String, String> conf)
      throws Exception {
    List<ClockedRun.Result> results = new ArrayList<>();
    results.add(query(false).run(ROCKSDB, base + "-event-time", steps(), conf));
    results.add(query(true).run(ROCKSDB, base + "-ttl", steps(), conf));
    return results;
  }

  @Test
  void onSparksRocksDbProviderOurManagerGivesTheReferenceRowsWithoutARename() throws Exception {
    RequestCounts.Source requests = RequestCounts.hdfs(dfs.cluster());
    String ours = dfs.path("/checkpoints/tws-ours").toString();
    String reference = dfs.path("/checkpoints/tws-reference").toString();

    awaitQuiet(requests);
    Map<String, Long> before = requests.snapshot();
    HedgeMetrics.Snapshot hedgesBefore = HedgeCounters.sparkStateFiles();
    List<ClockedRun.Result> ourRuns =
        runBoth(ours, Map.of(CFM_KEY, RenameFreeCheckpointFileManager.class.getName()));
    awaitQuiet(requests); // maintenance's snapshots (zips, SSTs) of the stopped query included
    Map<String, Long> oursByKind =
        byKind(requests, RequestCounts.delta(before, requests.snapshot()));
    HedgeMetrics.Snapshot hedges = HedgeCounters.sparkStateFiles().since(hedgesBefore);

    before = requests.snapshot();
    List<ClockedRun.Result> referenceRuns = runBoth(reference, Map.of());
    awaitQuiet(requests);
    Map<String, Long> referenceByKind =
        byKind(requests, RequestCounts.delta(before, requests.snapshot()));

    System.out.printf(
        "TWS on RocksDBStateStoreProvider (changelog checkpointing), checkpoint on HDFS:"
            + " event-time %d rows, processing-time+TTL %d rows;%n  NameNode requests, ours: %s%n"
            + "  NameNode requests, Spark's default manager: %s%n"
            + "  renames: ours %d, Spark's default manager %d%n"
            + "  RocksDB upload hedges (ours): %s%n",
        ourRuns.get(0).rows().size(),
        ourRuns.get(1).rows().size(),
        oursByKind,
        referenceByKind,
        oursByKind.getOrDefault("rename", 0L),
        referenceByKind.getOrDefault("rename", 0L),
        hedges);
    ourRuns.forEach(run -> run.rows().forEach(r -> System.out.println("  " + r)));

    for (int i = 0; i < 2; i++) {
      ClockedRun.Result ourRun = ourRuns.get(i);
      ClockedRun.Result referenceRun = referenceRuns.get(i);
      assertThat(ourRun.rows()).isNotEmpty().containsExactlyElementsOf(referenceRun.rows());
      assertThat(ourRun.lastNumRowsTotal()).isEqualTo(referenceRun.lastNumRowsTotal());
      // What the run exercised: timers fired.
      assertThat(ourRun.rows()).anyMatch(r -> r.contains(" expired at "));
    }
    assertThat(ourRuns.get(1).rows())
        .as("some row shows values dropped by the TTL")
        .anyMatch(
            r ->
                r.contains(" after: ")
                    && !r.endsWith("ttlDropped=0")
                    && !r.contains("ttlDropped=0 timer"));
    // The changelogs, zips and SSTs of Spark's provider are there, under the checkpoints.
    for (String query : new String[] {"-event-time", "-ttl"}) {
      assertThat(stateFileNames("/checkpoints/tws-ours" + query))
          .anyMatch(n -> n.endsWith(".changelog"))
          .anyMatch(n -> n.endsWith(".zip"))
          .anyMatch(n -> n.endsWith(".sst"))
          .noneMatch(n -> n.endsWith(".tmp"));
    }
    assertThat(hedges.writes()).as("changelogs and zips through the hedged path").isPositive();

    assertThat(oursByKind.getOrDefault("rename", 0L)).as("renames of our run").isZero();
    assertThat(oursByKind.getOrDefault("create", 0L)).as("the counter sees our run").isPositive();
    assertThat(referenceByKind.getOrDefault("rename", 0L))
        .as("the counter sees renames: Spark's default manager renames every file it writes")
        .isPositive();
  }

  private static List<String> stateFileNames(String checkpoint) throws Exception {
    List<String> names = new ArrayList<>();
    RemoteIterator<LocatedFileStatus> files =
        dfs.fileSystem().listFiles(dfs.path(checkpoint + "/state"), true);
    while (files.hasNext()) {
      FileStatus f = files.next();
      names.add(f.getPath().getName());
    }
    return names;
  }

  private static Map<String, Long> byKind(RequestCounts.Source source, Map<String, Long> delta) {
    Map<String, Long> out = new LinkedHashMap<>();
    delta.forEach(
        (op, n) -> {
          String kind = source.kindOf(op);
          if (kind != null) {
            out.merge(kind, n, Long::sum);
          }
        });
    return out;
  }

  /** Until the NameNode has seen no request for a second (at most 30 s; goes on regardless). */
  private static void awaitQuiet(RequestCounts.Source requests) {
    AtomicReference<Map<String, Long>> last = new AtomicReference<>(requests.snapshot());
    try {
      await()
          .pollDelay(Duration.ofSeconds(1))
          .pollInterval(Duration.ofSeconds(1))
          .atMost(Duration.ofSeconds(30))
          .until(() -> last.getAndSet(requests.snapshot()).equals(last.get()));
    } catch (ConditionTimeoutException e) {
      // Background requests go on (lease renewals): the windows are bracketed anyway.
    }
  }
}
