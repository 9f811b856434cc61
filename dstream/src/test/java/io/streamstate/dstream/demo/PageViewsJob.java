package io.streamstate.dstream.demo;

import io.streamstate.dstream.IncrementalMapWithState;
import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.jdbc.BatchOutcome;
import io.streamstate.dstream.jdbc.DirectStreamOffsets;
import io.streamstate.dstream.jdbc.ExactlyOnceJdbc;
import io.streamstate.dstream.jdbc.JdbcConnectionFactory;
import io.streamstate.dstream.state.BatchMarker;
import io.streamstate.dstream.testing.KafkaBrokerFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.Optional;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StateSpec;
import org.apache.spark.streaming.Time;
import org.apache.spark.streaming.api.java.JavaInputDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.streaming.kafka010.ConsumerStrategies;
import org.apache.spark.streaming.kafka010.HasOffsetRanges;
import org.apache.spark.streaming.kafka010.KafkaUtils;
import org.apache.spark.streaming.kafka010.LocationStrategies;
import org.apache.spark.streaming.kafka010.OffsetRange;
import scala.Tuple2;

/**
 * The demo's streaming job (the driver {@link PageViewsDemo} starts, kills and restarts): page
 * views from Kafka through a direct stream; per batch, the views per page; a sliding window of them
 * with an inverse function (trending pages); our {@code mapWithState} keeping each page's running
 * total; and, per batch, the totals, the trending counts and the Kafka offsets written to
 * PostgreSQL in one transaction.
 *
 * <p>How the state and the database stay in step after a {@code kill -9}: the state resumes at its
 * last completed batch (version m), which may be behind the database (a batch whose transaction
 * committed but whose completion was not yet recorded). So the stream starts from the offsets
 * recorded for version m (table {@code demo_state_offsets}, written before each batch's
 * transaction, so present for every completed version), the state re-applies what it missed, and
 * the database, which already has part of it, gets ranges clipped to its stored offsets: the totals
 * written are the state's (an upsert), so a batch written again writes the same values.
 *
 * <p>Arguments: bootstrap servers, JDBC URL, topic, partitions, state root URI, Spark checkpoint
 * directory (for the window's RDD checkpoints; the job never restores a metadata checkpoint), Spark
 * local directory, and the file whose appearance (holding the end offsets) means that all input was
 * produced: the job stops once it has consumed it.
 */
public final class PageViewsJob {
  static final String APP = "pageviews-demo";
  private static final Map<Time, OffsetRange[]> RANGES = new ConcurrentHashMap<>();
  private static final AtomicLong BATCHES = new AtomicLong();
  private static final Map<TopicPartition, Long> DB_OFFSETS = new ConcurrentHashMap<>();
  private static volatile boolean caughtUp;

  private PageViewsJob() {}

  @SuppressWarnings(
      "deprecation") // DStreams are deprecated in Spark 4.2, and what this demo shows.
  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String url = args[1];
    String topic = args[2];
    int partitions = Integer.parseInt(args[3]);
    String stateRoot = args[4];
    String checkpointDir = args[5];
    String localDir = args[6];
    String doneFile = args[7];

    JdbcConnectionFactory connections = () -> DriverManager.getConnection(url);
    createTables(connections);
    DirectStreamOffsets offsets = ExactlyOnceJdbc.forDirectStream(connections, APP);
    DB_OFFSETS.putAll(offsets.storedOffsets(topic));

    StreamStateDStreams.Options state =
        StreamStateDStreams.Options.at(stateRoot).name("page-totals");
    long startVersion =
        StreamStateDStreams.lastCompletedBatch(state).map(BatchMarker::version).orElse(0L);
    Map<TopicPartition, Long> from = offsetsAtVersion(connections, startVersion, topic, partitions);
    System.out.println(
        "STARTED state version "
            + startVersion
            + ", Kafka from "
            + from
            + ", database at "
            + DB_OFFSETS);
    System.out.flush();

    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName(APP)
            .set("spark.ui.enabled", "false")
            .set("spark.driver.host", "127.0.0.1")
            .set("spark.driver.bindAddress", "127.0.0.1")
            .set("spark.local.dir", localDir)
            .set("spark.sql.shuffle.partitions", "2")
            .set("spark.streaming.kafka.maxRatePerPartition", "2500");
    JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.seconds(1));
    ssc.checkpoint(checkpointDir); // RDD checkpoints of the window; no metadata restore.

    Map<String, Object> kafka = KafkaBrokerFixture.directStreamParams(bootstrap, APP);
    JavaInputDStream<ConsumerRecord<String, String>> stream =
        KafkaUtils.createDirectStream(
            ssc,
            LocationStrategies.PreferConsistent(),
            ConsumerStrategies.Assign(new ArrayList<>(from.keySet()), kafka, from));

    // Each batch's Kafka ranges, taken at job generation (the direct stream's own RDD).
    JavaPairDStream<String, Long> viewsPerPage =
        stream
            .transform(
                (rdd, time) -> {
                  RANGES.put(time, ((HasOffsetRanges) rdd.rdd()).offsetRanges());
                  return rdd;
                })
            .mapToPair(r -> new Tuple2<>(r.value(), 1L))
            .reduceByKey(Long::sum, 2);

    JavaPairDStream<String, Long> trending =
        viewsPerPage.reduceByKeyAndWindow(
            Long::sum, (a, b) -> a - b, Durations.seconds(5), Durations.seconds(1));

    StateSpec<String, Long, Long, Tuple2<String, Long>> spec =
        StateSpec.function(
                (String page, Optional<Long> views, State<Long> total) -> {
                  long sum = (total.exists() ? total.get() : 0L) + views.orElse(0L);
                  total.update(sum);
                  return new Tuple2<>(page, sum);
                })
            .numPartitions(2);
    IncrementalMapWithState<String, Long, Tuple2<String, Long>> totals =
        StreamStateDStreams.mapWithState(viewsPerPage, spec, state);

    JavaPairDStream<String, Tuple2<Long, org.apache.spark.api.java.Optional<Long>>> joined =
        totals.mapToPair(t -> t).leftOuterJoin(trending, 2);

    joined.foreachRDD(
        (rdd, time) -> {
          OffsetRange[] ranges = RANGES.remove(time);
          long version = startVersion + BATCHES.incrementAndGet();
          Map<String, Tuple2<Long, org.apache.spark.api.java.Optional<Long>>> rows =
              rdd.collectAsMap();
          // First: where the input stands after this version (a fact, whatever the database has).
          recordVersionOffsets(connections, version, ranges);
          OffsetRange[] clipped = clip(ranges);
          BatchOutcome outcome = offsets.writeBatch(clipped, c -> upsert(c, rows));
          for (OffsetRange r : clipped) {
            DB_OFFSETS.merge(r.topicPartition(), r.untilOffset(), Math::max);
          }
          long records = 0;
          for (OffsetRange r : ranges) {
            records += r.count();
          }
          System.out.println(
              "BATCH version "
                  + version
                  + " records "
                  + records
                  + " pages "
                  + rows.size()
                  + " "
                  + outcome);
          System.out.flush();
          if (Files.exists(Path.of(doneFile))
              && consumedAll(ranges, Files.readString(Path.of(doneFile)))) {
            caughtUp = true;
          }
        });

    ssc.start();
    while (!caughtUp) {
      if (ssc.awaitTerminationOrTimeout(200)) {
        return;
      }
    }
    ssc.stop(true, true); // the last batches complete, and are recorded as such
    System.out.println("STOPPED");
  }

  /** The ranges, each starting no earlier than what the database has: a replay of what it has. */
  private static OffsetRange[] clip(OffsetRange[] ranges) {
    OffsetRange[] out = new OffsetRange[ranges.length];
    for (int i = 0; i < ranges.length; i++) {
      OffsetRange r = ranges[i];
      long stored = DB_OFFSETS.getOrDefault(r.topicPartition(), r.fromOffset());
      long start = Math.max(r.fromOffset(), stored);
      out[i] =
          OffsetRange.create(r.topic(), r.partition(), start, Math.max(r.untilOffset(), start));
    }
    return out;
  }

  private static boolean consumedAll(OffsetRange[] ranges, String endOffsets) {
    Map<Integer, Long> end = new HashMap<>();
    for (String part : endOffsets.trim().split(",")) {
      String[] kv = part.split("=");
      end.put(Integer.parseInt(kv[0]), Long.parseLong(kv[1]));
    }
    for (OffsetRange r : ranges) {
      if (r.untilOffset() < end.getOrDefault(r.partition(), 0L)) {
        return false;
      }
    }
    return true;
  }

  static void createTables(JdbcConnectionFactory connections) throws SQLException {
    try (Connection c = connections.open();
        Statement s = c.createStatement()) {
      s.execute(
          "CREATE TABLE IF NOT EXISTS page_totals (page VARCHAR(64) PRIMARY KEY,"
              + " views BIGINT NOT NULL, trending BIGINT NOT NULL)");
      s.execute(
          "CREATE TABLE IF NOT EXISTS demo_state_offsets (version BIGINT NOT NULL,"
              + " kafka_partition INT NOT NULL, until_offset BIGINT NOT NULL,"
              + " PRIMARY KEY (version, kafka_partition))");
    }
  }

  private static Map<TopicPartition, Long> offsetsAtVersion(
      JdbcConnectionFactory connections, long version, String topic, int partitions)
      throws SQLException {
    Map<TopicPartition, Long> from = new HashMap<>();
    for (int p = 0; p < partitions; p++) {
      from.put(new TopicPartition(topic, p), 0L);
    }
    if (version == 0) {
      return from;
    }
    try (Connection c = connections.open();
        PreparedStatement s =
            c.prepareStatement(
                "SELECT kafka_partition, until_offset FROM demo_state_offsets WHERE version = ?")) {
      s.setLong(1, version);
      int found = 0;
      try (ResultSet rows = s.executeQuery()) {
        while (rows.next()) {
          from.put(new TopicPartition(topic, rows.getInt(1)), rows.getLong(2));
          found++;
        }
      }
      if (found != partitions) {
        throw new IllegalStateException(
            "No offsets recorded for state version " + version + " in demo_state_offsets");
      }
    }
    return from;
  }

  private static void recordVersionOffsets(
      JdbcConnectionFactory connections, long version, OffsetRange[] ranges) throws SQLException {
    try (Connection c = connections.open();
        PreparedStatement s =
            c.prepareStatement(
                "INSERT INTO demo_state_offsets (version, kafka_partition, until_offset)"
                    + " VALUES (?, ?, ?) ON CONFLICT (version, kafka_partition)"
                    + " DO UPDATE SET until_offset = EXCLUDED.until_offset")) {
      for (OffsetRange r : ranges) {
        s.setLong(1, version);
        s.setInt(2, r.partition());
        s.setLong(3, r.untilOffset());
        s.addBatch();
      }
      s.executeBatch();
    }
  }

  private static void upsert(
      Connection c, Map<String, Tuple2<Long, org.apache.spark.api.java.Optional<Long>>> rows)
      throws SQLException {
    try (PreparedStatement s =
        c.prepareStatement(
            "INSERT INTO page_totals (page, views, trending) VALUES (?, ?, ?)"
                + " ON CONFLICT (page) DO UPDATE SET views = EXCLUDED.views,"
                + " trending = EXCLUDED.trending")) {
      for (Map.Entry<String, Tuple2<Long, org.apache.spark.api.java.Optional<Long>>> e :
          new java.util.TreeMap<>(rows).entrySet()) {
        s.setString(1, e.getKey());
        s.setLong(2, e.getValue()._1());
        s.setLong(3, e.getValue()._2().orElse(0L));
        s.addBatch();
      }
      s.executeBatch();
    }
  }

  /** Reads the table the demo checks. */
  static Map<String, Long> totals(JdbcConnectionFactory connections) throws SQLException {
    Map<String, Long> out = new java.util.TreeMap<>();
    try (Connection c = connections.open();
        Statement s = c.createStatement();
        ResultSet rows = s.executeQuery("SELECT page, views FROM page_totals")) {
      while (rows.next()) {
        out.put(rows.getString(1), rows.getLong(2));
      }
    }
    return out;
  }

  static List<String> topTrending(JdbcConnectionFactory connections) throws SQLException {
    List<String> out = new ArrayList<>();
    try (Connection c = connections.open();
        Statement s = c.createStatement();
        ResultSet rows =
            s.executeQuery("SELECT page, views FROM page_totals ORDER BY views DESC LIMIT 3")) {
      while (rows.next()) {
        out.add(rows.getString(1) + "=" + rows.getLong(2));
      }
    }
    return out;
  }
}
