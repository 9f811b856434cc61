package io.streamstate.bench.spark;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.timestamp_millis;
import static org.apache.spark.sql.functions.window;

import java.time.Instant;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * The benchmark's queries, each over Spark's deterministic {@code rate-micro-batch} source (batch
 * {@code n} holds rows {@code n*R .. n*R+R-1}; every column is a function of the row number), sized
 * so that the state holds about {@code keys} rows once it is full.
 */
enum Workload {
  /**
   * The seed job (examples' OrderRevenueDemo at scale): 1-minute event-time windows, 1-minute
   * watermark, revenue and count per shop; {@code keys/2} shops, each minute of event time holds
   * every shop once, so the state holds about two windows of {@code keys/2} shops.
   */
  WINDOW_AGG("window-agg") {
    @Override
    Dataset<Row> build(SparkSession spark, long keys, long rowsPerBatch) {
      long shops = Math.max(1, keys / 2);
      double msPerRow = 60_000.0 / shops;
      return rate(spark, rowsPerBatch)
          .select(
              pmod(col("value"), lit(shops)).as("shop"),
              pmod(col("value").multiply(7919), lit(5000)).divide(100).plus(1).as("amount"),
              eventTime(msPerRow))
          .withWatermark("event_time", "1 minute")
          .groupBy(window(col("event_time"), "1 minute"), col("shop"))
          .agg(sum("amount").as("revenue"), count(lit(1)).as("orders"));
    }
  },
  /**
   * {@code dropDuplicatesWithinWatermark} on an id that every row shares with its neighbour (half
   * the rows are duplicates); {@code keys} rows per minute of event time, the state keeps about the
   * last two minutes' distinct ids.
   */
  DEDUP("dedup") {
    @Override
    Dataset<Row> build(SparkSession spark, long keys, long rowsPerBatch) {
      double msPerRow = 60_000.0 / Math.max(1, keys);
      return rate(spark, rowsPerBatch)
          .select(col("value").divide(2).cast("long").as("id"), eventTime(msPerRow))
          .withWatermark("event_time", "1 minute")
          .dropDuplicatesWithinWatermark("id");
    }
  },
  /**
   * Inner stream-stream join of orders and payments on the order id, the payment within a minute of
   * the order, 1-minute watermarks on both sides; each side keeps about {@code keys/2} rows.
   */
  JOIN("join") {
    @Override
    Dataset<Row> build(SparkSession spark, long keys, long rowsPerBatch) {
      double msPerRow = 240_000.0 / Math.max(1, keys);
      // Each side gets half the rows, so that a batch has as many input rows as the others.
      long perSide = Math.max(1, rowsPerBatch / 2);
      Dataset<Row> orders =
          rate(spark, perSide)
              .select(col("value").as("order_id"), eventTime(msPerRow).as("order_time"))
              .withWatermark("order_time", "1 minute");
      Dataset<Row> payments =
          rate(spark, perSide)
              .select(
                  col("value").as("pay_order_id"),
                  timestamp_millis(
                          col("value").multiply(msPerRow).cast("long").plus(START_MS + 5_000))
                      .as("pay_time"),
                  pmod(col("value").multiply(31), lit(1000)).as("pay_amount"))
              .withWatermark("pay_time", "1 minute");
      return orders.join(
          payments,
          expr(
              "order_id = pay_order_id AND pay_time >= order_time"
                  + " AND pay_time <= order_time + interval 1 minute"));
    }
  },
  /**
   * {@code transformWithState} (value, list and map state, event-time timers) keyed by {@code value
   * % keys}, {@code keys} keys per minute of event time, 1-minute watermark: a key's timer a minute
   * after its newest event clears it, so the state holds about {@code keys} keys. Spark 4.2 runs it
   * on its RocksDB provider only ({@link RoundPlan#runs}).
   */
  TWS("tws") {
    @Override
    @SuppressWarnings("unchecked")
    Dataset<Row> build(SparkSession spark, long keys, long rowsPerBatch) {
      // Built by TwsQuery, which (with its processor) is compiled on Spark 4.x lines only: Spark
      // 3.5
      // has no transformWithState (the parent POM's line.bench.excludes).
      try {
        return (Dataset<Row>)
            Class.forName("io.streamstate.bench.spark.TwsQuery")
                .getDeclaredMethod("build", Dataset.class, long.class)
                .invoke(null, rate(spark, rowsPerBatch), Math.max(1, keys));
      } catch (ReflectiveOperationException e) {
        throw new IllegalStateException(
            "The tws workload needs Spark 4.0+ (this bench was built without it): " + e, e);
      }
    }

    @Override
    boolean runsOn(Provider provider) {
      return provider.className.equals(Provider.ROCKSDB.className);
    }
  };

  /** Whether Spark runs this workload on {@code provider} (all but {@link #TWS}: every one). */
  boolean runsOn(Provider provider) {
    return true;
  }

  static final long START_MS = Instant.parse("2026-01-01T00:00:00Z").toEpochMilli();

  final String label;

  Workload(String label) {
    this.label = label;
  }

  abstract Dataset<Row> build(SparkSession spark, long keys, long rowsPerBatch);

  static Workload byLabel(String label) {
    for (Workload w : values()) {
      if (w.label.equals(label)) {
        return w;
      }
    }
    throw new IllegalArgumentException("Unknown workload " + label);
  }

  private static Dataset<Row> rate(SparkSession spark, long rowsPerBatch) {
    return spark
        .readStream()
        .format("rate-micro-batch")
        .option("rowsPerBatch", rowsPerBatch)
        .option("numPartitions", 2)
        .load();
  }

  static Column eventTime(double msPerRow) {
    return timestamp_millis(col("value").multiply(msPerRow).cast("long").plus(START_MS))
        .as("event_time");
  }
}
