package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import scala.Tuple2;

/**
 * {@code transformWithState} with our provider: on the lines that let it reach a provider other
 * than Spark's RocksDB one (4.0 and 4.1), value, list and map state and event-time timers, across
 * restarts, with the same output and the same row counts as {@code RocksDBStateStoreProvider}; on
 * 4.2, Spark's own refusal, with its error class.
 */
class TransformWithStateIT {
  static final Path work = TestSessions.newWorkDir(TransformWithStateIT.class);
  static final String ROCKSDB =
      "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider";
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark = TestSessions.start("TransformWithStateIT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
  }

  /**
   * Per key: a count (value state), the values seen (list state) and a count per parity (map
   * state); one event-time timer at the key's newest event + 5 s, which reports and clears it all.
   */
  static final class Tracker extends StatefulProcessor<String, Row, String> {
    private transient ValueState<Long> count;
    private transient ListState<Integer> values;
    private transient MapState<String, Long> parities;

    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {
      count = getHandle().getValueState("count", Encoders.LONG(), TTLConfig.NONE());
      values = getHandle().getListState("values", Encoders.INT(), TTLConfig.NONE());
      parities =
          getHandle().getMapState("parities", Encoders.STRING(), Encoders.LONG(), TTLConfig.NONE());
    }

    @Override
    public scala.collection.Iterator<String> handleInputRows(
        String key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      long n = count.exists() ? count.get() : 0;
      long newest = Long.MIN_VALUE;
      while (rows.hasNext()) {
        Row r = rows.next();
        int value = r.getInt(2);
        n++;
        values.appendValue(value);
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
      getHandle().registerTimer(newest + 5000);
      return one(key + " " + describe() + " timer=" + (newest + 5000) + " replaced=" + old);
    }

    @Override
    public scala.collection.Iterator<String> handleExpiredTimer(
        String key, TimerValues timerValues, ExpiredTimerInfo expiredTimerInfo) {
      String line =
          key
              + " expired at "
              + expiredTimerInfo.getExpiryTimeInMs()
              + " (watermark "
              + timerValues.getCurrentWatermarkInMs()
              + ") "
              + describe();
      count.clear();
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
      return "count=" + count.get() + " values=" + seen + " parities=" + byParity;
    }

    private static scala.collection.Iterator<String> one(String line) {
      return ScalaInterop.iterator(List.of(line).iterator());
    }
  }

  @Test
  void valueListMapStateAndTimersMatchRocksDbProviderAcrossRestarts() throws Exception {
    assumeTrue(
        !TestSessions.sparkAtLeast(4, 2),
        "Spark 4.2 refuses transformWithState for providers other than its RocksDB one");
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in ->
                in.get(0)
                    .withWatermark("ts", "2 seconds")
                    .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                    .transformWithState(
                        new Tracker(), TimeMode.EventTime(), OutputMode.Update(), Encoders.STRING())
                    .toDF(),
            OutputMode.Update());
    ClockedRun.Steps steps =
        new ClockedRun.Steps()
            .data(0, ev("a", 1, 1), ev("b", 2, 2), ev("a", 2, 4))
            .tick()
            .data(0, ev("a", 3, 5), ev("b", 4, 7), ev("c", 5, 8))
            .tick()
            .restart()
            .data(0, ev("c", 6, 9), ev("d", 20, 10)) // watermark 18 s: a, b and c expire
            .tick()
            .tick()
            .data(0, ev("b", 21, 11), ev("d", 22, 12))
            .tick()
            .restart()
            .data(0, ev("e", 40, 13)) // watermark 38 s: b and d expire
            .ticks(3);
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("ours"), steps);
    ClockedRun.Result rocksdb = run.run(ROCKSDB, work.resolve("rocksdb"), steps);

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(rocksdb.rows());
    assertThat(ours.rows())
        .filteredOn(r -> r.contains("expired"))
        .extracting(r -> r.substring(1, 2)) // rows print as "[a expired ...]"
        .containsExactlyInAnyOrder("a", "b", "c", "b", "d");
    assertThat(ours.rows())
        .as("the list and map state survived the restart")
        .contains(
            "[c expired at 11000 (watermark 18000) count=2 values=[8, 9] parities={even=1, odd=1}]");
    assertThat(ours.lastNumRowsTotal()).isEqualTo(rocksdb.lastNumRowsTotal());
  }

  /** A processor that does nothing: Spark refuses it before it ever runs. */
  static final class NoopProcessor extends StatefulProcessor<String, Row, String> {
    @Override
    public void init(OutputMode outputMode, TimeMode timeMode) {}

    @Override
    public scala.collection.Iterator<String> handleInputRows(
        String key, scala.collection.Iterator<Row> rows, TimerValues timerValues) {
      return scala.collection.Iterator$.MODULE$.empty();
    }
  }

  @Test
  void transformWithStateIsRefusedBySparkForEveryProviderButItsRocksDb() {
    assumeTrue(TestSessions.sparkAtLeast(4, 2), "Spark refuses other providers from 4.2 on");
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in ->
                in.get(0)
                    .groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
                    .transformWithState(
                        new NoopProcessor(),
                        TimeMode.None(),
                        OutputMode.Update(),
                        Encoders.STRING())
                    .toDF(),
            OutputMode.Update());
    ClockedRun.Steps steps = new ClockedRun.Steps().data(0, ev("a", 1, 1)).tick();

    assertThatThrownBy(() -> run.run(TestSessions.OURS, work.resolve("refused"), steps))
        .hasStackTraceContaining("STORE_BACKEND_NOT_SUPPORTED_FOR_TWS")
        .hasStackTraceContaining(TestSessions.OURS);
  }
}
