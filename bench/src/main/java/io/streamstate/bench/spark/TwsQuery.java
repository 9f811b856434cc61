package io.streamstate.bench.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;

import org.apache.spark.api.java.function.MapFunction;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.streaming.OutputMode;
import org.apache.spark.sql.streaming.TimeMode;

/**
 * The {@code tws} workload's query ({@link Workload#TWS}), apart so that Spark 3.5 builds, which
 * have no {@code transformWithState}, leave it out (the parent POM's {@code line.bench.excludes}).
 */
final class TwsQuery {
  private TwsQuery() {}

  /** {@code keys} keys, {@code keys} rows per minute of event time, 1-minute watermark. */
  static Dataset<Row> build(Dataset<Row> rate, long keys) {
    double msPerRow = 60_000.0 / keys;
    return rate.select(
            pmod(col("value"), lit(keys)).as("key"),
            pmod(col("value").multiply(7919), lit(5000)).as("amount"),
            Workload.eventTime(msPerRow))
        .withWatermark("event_time", "1 minute")
        .groupByKey((MapFunction<Row, Long>) r -> r.getLong(0), Encoders.LONG())
        .transformWithState(
            new TwsProcessor(), TimeMode.EventTime(), OutputMode.Update(), Encoders.STRING())
        .toDF();
  }
}
