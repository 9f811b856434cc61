package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.sql.Timestamp;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import org.apache.spark.api.java.function.FlatMapGroupsWithStateFunction;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.GroupState;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * flatMapGroupsWithState with processing-time and event-time timeouts: same output as the
 * HDFS-backed provider. Processing time is deterministic here because a manual clock drives the
 * trigger (see {@link ClockedRun}): both runs see the same batch timestamps, so the same keys time
 * out in the same batches; the output includes those timestamps to prove it.
 */
class FlatMapGroupsWithStateIT {
  static final Path work = TestSessions.newWorkDir(FlatMapGroupsWithStateIT.class);
  private static SparkSession spark;

  @BeforeAll
  static void startSpark() {
    spark = TestSessions.start("FlatMapGroupsWithStateIT", work, Map.of());
  }

  @AfterAll
  static void stopSpark() {
    spark.stop();
    TestSessions.assertHedgedIfForced();
  }

  /** Counts events per key; a key idle for 2.5 s of processing time times out and is reported. */
  static final class ProcessingTimeCounter
      implements FlatMapGroupsWithStateFunction<String, Row, Long, String> {
    @Override
    public Iterator<String> call(String key, Iterator<Row> rows, GroupState<Long> state) {
      List<String> out = new ArrayList<>();
      if (state.hasTimedOut()) {
        out.add(key + " timed out at " + state.getCurrentProcessingTimeMs() + " n=" + state.get());
        state.remove();
        return out.iterator();
      }
      long n = state.exists() ? state.get() : 0;
      while (rows.hasNext()) {
        rows.next();
        n++;
      }
      state.update(n);
      state.setTimeoutDuration(2500);
      out.add(key + " n=" + n + " at " + state.getCurrentProcessingTimeMs());
      return out.iterator();
    }
  }

  /** Sums values per key; times out when the watermark passes the key's last event + 5 s. */
  static final class EventTimeSummer
      implements FlatMapGroupsWithStateFunction<String, Row, Long, String> {
    @Override
    public Iterator<String> call(String key, Iterator<Row> rows, GroupState<Long> state) {
      List<String> out = new ArrayList<>();
      if (state.hasTimedOut()) {
        out.add(key + " closed sum=" + state.get() + " watermark=" + state.getCurrentWatermarkMs());
        state.remove();
        return out.iterator();
      }
      long sum = state.exists() ? state.get() : 0;
      long maxTs = Long.MIN_VALUE;
      while (rows.hasNext()) {
        Row r = rows.next();
        sum += r.getInt(2);
        maxTs = Math.max(maxTs, r.<Timestamp>getAs(1).getTime());
      }
      state.update(sum);
      state.setTimeoutTimestamp(maxTs + 5000);
      out.add(key + " sum=" + sum);
      return out.iterator();
    }
  }

  private static Dataset<Row> withState(
      Dataset<Row> in,
      FlatMapGroupsWithStateFunction<String, Row, Long, String> f,
      GroupStateTimeout timeout) {
    return in.groupByKey((MapFunction<Row, String>) r -> r.getString(0), Encoders.STRING())
        .flatMapGroupsWithState(f, OutputMode.Update(), Encoders.LONG(), Encoders.STRING(), timeout)
        .toDF();
  }

  @Test
  void processingTimeTimeoutsMatchHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in ->
                withState(
                    in.get(0),
                    new ProcessingTimeCounter(),
                    GroupStateTimeout.ProcessingTimeTimeout()),
            OutputMode.Update());
    ClockedRun.Steps steps =
        new ClockedRun.Steps()
            .data(0, ev("a", 1, 1), ev("b", 1, 1), ev("a", 2, 1))
            .tick()
            .data(0, ev("b", 3, 1))
            .tick()
            .tick()
            .restart()
            .data(0, ev("c", 4, 1))
            .tick() // t=4000: a times out (its timeout: 1000 + 2500)
            .tick() // t=5000: b times out (2000 + 2500)
            .data(0, ev("a", 5, 1))
            .tick()
            .restart()
            // After a restart Spark runs no batch before new data arrives (it has no previous
            // batch to ask whether another is needed), so d restarts the flow of batches.
            .data(0, ev("d", 6, 1))
            .ticks(4); // c, a and d time out
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("pt-ours"), steps);
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("pt-hdfs"), steps);

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    assertThat(ours.rows())
        .filteredOn(r -> r.contains("timed out"))
        .containsExactlyInAnyOrder(
            "[a timed out at 4000 n=2]",
            "[b timed out at 5000 n=2]",
            "[c timed out at 7000 n=1]",
            "[a timed out at 9000 n=1]",
            "[d timed out at 10000 n=1]");
  }

  @Test
  void eventTimeTimeoutsMatchHdfsProvider() throws Exception {
    ClockedRun run =
        new ClockedRun(
            spark,
            1,
            in ->
                withState(
                    in.get(0).withWatermark("ts", "10 seconds"),
                    new EventTimeSummer(),
                    GroupStateTimeout.EventTimeTimeout()),
            OutputMode.Update());
    ClockedRun.Steps steps =
        new ClockedRun.Steps()
            .data(0, ev("a", 100, 1), ev("b", 101, 2), ev("a", 102, 3))
            .tick()
            .data(0, ev("a", 110, 4), ev("c", 112, 5))
            .tick()
            .restart()
            .data(0, ev("b", 130, 6)) // watermark -> 120: a (107) and b (106) time out
            .tick()
            .tick()
            .data(0, ev("c", 115, 7), ev("d", 160, 8))
            .tick()
            .restart()
            .tick()
            .data(0, ev("e", 300, 1))
            .ticks(2);
    ClockedRun.Result ours = run.run(TestSessions.OURS, work.resolve("et-ours"), steps);
    ClockedRun.Result hdfs = run.run(TestSessions.HDFS, work.resolve("et-hdfs"), steps);

    assertThat(ours.rows()).isNotEmpty().containsExactlyElementsOf(hdfs.rows());
    assertThat(ours.lastNumRowsTotal()).isEqualTo(hdfs.lastNumRowsTotal());
    assertThat(ours.rows()).anyMatch(r -> r.startsWith("[a closed sum=8 "));
  }
}
