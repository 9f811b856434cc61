package io.streamstate.spark;

import static io.streamstate.spark.ClockedRun.ev;

import java.util.List;
import java.util.function.Function;
import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.GroupStateTimeout;
import org.apache.spark.sql.streaming.OutputMode;

/**
 * The queries and steps of the offline rewrite ITs ({@link OfflineRepartitionIT}, {@link
 * OfflineConvertIT}): one query per stateful operator, and steps that stop the query twice, with
 * state carried across both stops, late rows and expiring windows after each.
 */
final class OfflineRewriteCases {
  private OfflineRewriteCases() {}

  /** One operator's query: its inputs and output mode. */
  record Case(
      String name, int inputs, Function<List<Dataset<Row>>, Dataset<Row>> query, OutputMode mode) {
    Case named(String newName) {
      return new Case(newName, inputs, query, mode);
    }
  }

  static final Case AGGREGATION =
      new Case("aggregation", 1, AggregationIT::windowedQuery, OutputMode.Update());

  static final Case DEDUP =
      new Case(
          "dedup",
          1,
          in -> in.get(0).withWatermark("ts", "10 seconds").dropDuplicates("key", "ts"),
          OutputMode.Append());

  static final Case JOIN =
      new Case("join", 2, in -> StreamStreamJoinIT.joined(in, "left_outer"), OutputMode.Append());

  static final Case FLAT_MAP_GROUPS_WITH_STATE =
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
          OutputMode.Update());

  /**
   * Keys spread over every partition; the query stopped after the second batch (running {@code
   * firstStop}) and after the third ({@code secondStop}); late rows and expiring windows after
   * each.
   */
  static ClockedRun.Steps steps(Case c, Runnable firstStop, Runnable secondStop) {
    ClockedRun.Steps steps = new ClockedRun.Steps();
    steps.data(0, ev("a", 100, 1), ev("b", 101, 2), ev("c", 102, 3), ev("d", 103, 4));
    if (c.inputs() > 1) {
      steps.data(1, ev("a", 101, 10), ev("c", 103, 11), ev("e", 100, 12));
    }
    steps.tick().data(0, ev("e", 104, 5), ev("f", 105, 6), ev("g", 106, 7), ev("a", 107, 8));
    if (c.inputs() > 1) {
      steps.data(1, ev("b", 102, 13), ev("g", 108, 14));
    }
    steps.tick().restart(firstStop);
    steps.data(0, ev("a", 108, 9), ev("h", 109, 10), ev("b", 112, 11), ev("c", 101, 12));
    if (c.inputs() > 1) {
      steps.data(1, ev("h", 110, 15), ev("a", 109, 16), ev("f", 104, 17));
    }
    steps.tick().restart(secondStop);
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
}
