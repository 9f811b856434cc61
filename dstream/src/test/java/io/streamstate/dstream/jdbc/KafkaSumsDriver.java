package io.streamstate.dstream.jdbc;

import io.streamstate.dstream.testing.KafkaBrokerFixture;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;
import scala.Tuple2;

/**
 * The driver {@link ExactlyOnceKafkaKillIT} runs in a child JVM and kills: a Kafka direct stream
 * (local[2], 500 ms batches) that sums the integer values per key and adds each batch's sums to
 * table {@code kafka_sums} through {@link DirectStreamOffsets}, started from the stored offsets.
 *
 * <p>Arguments: bootstrap servers, JDBC URL, topic, partitions, app name, mode ({@code driver}:
 * pattern (a), sums collected to the driver and written with all ranges; {@code partition}: pattern
 * (b), each task writes its Kafka partition's sums with its own range), max records per partition
 * per second, Spark local directory. Prints {@code STARTED}, then {@code COMMITTED} or {@code
 * SKIPPED_REPLAY} per non-empty write, for the test to count.
 */
public final class KafkaSumsDriver {
  static final String CREATE_SUMS_TABLE =
      "CREATE TABLE IF NOT EXISTS kafka_sums (k VARCHAR(64) PRIMARY KEY,"
          + " total BIGINT NOT NULL, records BIGINT NOT NULL)";

  private KafkaSumsDriver() {}

  /** Runs until killed; the arguments are in the class comment. */
  @SuppressWarnings(
      "deprecation") // DStreams are deprecated in Spark 4.2, and what this module serves.
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String url = args[1];
    String topic = args[2];
    int partitions = Integer.parseInt(args[3]);
    String app = args[4];
    String mode = args[5];
    String rate = args[6];
    String localDir = args[7];

    JdbcConnectionFactory connections = () -> DriverManager.getConnection(url);
    try (Connection c = connections.open();
        Statement s = c.createStatement()) {
      s.execute(CREATE_SUMS_TABLE);
    }
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, app);
    Map<TopicPartition, Long> stored = offsets.storedOffsets(topic);
    List<TopicPartition> all = new ArrayList<>();
    for (int p = 0; p < partitions; p++) {
      all.add(new TopicPartition(topic, p));
    }

    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName(app)
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.local.dir", localDir)
            .set("spark.streaming.kafka.maxRatePerPartition", rate);
    JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.milliseconds(500));
    Map<String, Object> kafkaParams = KafkaBrokerFixture.directStreamParams(bootstrap, app);
    // Assign, not Subscribe: a zombie and its replacement share the group id, and group
    // management would split the partitions between them.
    JavaInputDStream<ConsumerRecord<String, String>> stream =
        KafkaUtils.createDirectStream(
            ssc,
            LocationStrategies.PreferConsistent(),
            ConsumerStrategies.Assign(all, kafkaParams, stored));
    System.out.println("STARTED " + stored);
    System.out.flush();

    if (mode.equals("driver")) {
      stream.foreachRDD(
          rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            JavaPairRDD<String, long[]> pairs =
                rdd.mapToPair(
                    r -> new Tuple2<>(r.key(), new long[] {Long.parseLong(r.value()), 1}));
            Map<String, long[]> sums =
                pairs.reduceByKey((a, b) -> new long[] {a[0] + b[0], a[1] + b[1]}).collectAsMap();
            BatchOutcome outcome = offsets.writeBatch(ranges, c -> upsert(c, sums));
            report(outcome, ranges);
          });
    } else {
      stream.foreachRDD(
          rdd -> {
            OffsetRange[] ranges = ((HasOffsetRanges) rdd.rdd()).offsetRanges();
            rdd.foreachPartition(
                records -> {
                  Map<String, long[]> sums = new HashMap<>();
                  while (records.hasNext()) {
                    ConsumerRecord<String, String> r = records.next();
                    long[] s = sums.computeIfAbsent(r.key(), k -> new long[2]);
                    s[0] += Long.parseLong(r.value());
                    s[1] += 1;
                  }
                  BatchOutcome outcome = offsets.writeTaskPartition(ranges, c -> upsert(c, sums));
                  report(
                      outcome,
                      new OffsetRange[] {ranges[org.apache.spark.TaskContext.get().partitionId()]});
                });
          });
    }
    ssc.start();
    ssc.awaitTermination();
  }

  private static void report(BatchOutcome outcome, OffsetRange[] ranges) {
    long records = 0;
    for (OffsetRange r : ranges) {
      records += r.count();
    }
    if (records > 0) {
      System.out.println(outcome + " " + Arrays.toString(ranges));
      System.out.flush();
    }
  }

  private static void upsert(Connection c, Map<String, long[]> sums) throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "INSERT INTO kafka_sums (k, total, records) VALUES (?, ?, ?) ON CONFLICT (k) DO UPDATE"
                + " SET total = kafka_sums.total + EXCLUDED.total,"
                + " records = kafka_sums.records + EXCLUDED.records")) {
      // Keys in one order: concurrent tasks (pattern b) upserting overlapping keys cannot deadlock.
      for (Map.Entry<String, long[]> e : new TreeMap<>(sums).entrySet()) {
        s.setString(1, e.getKey());
        s.setLong(2, e.getValue()[0]);
        s.setLong(3, e.getValue()[1]);
        s.addBatch();
      }
      s.executeBatch();
    }
  }
}
