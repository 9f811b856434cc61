package io.streamstate.dstream.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.testing.ChildJvm;
import io.streamstate.dstream.testing.EmbeddedPostgresFixture;
import io.streamstate.dstream.testing.KafkaBrokerFixture;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Exactly-once output under SIGKILL: a Kafka direct stream in a child JVM ({@link KafkaSumsDriver})
 * adds per-key sums of a known input to PostgreSQL with the offsets in the same transaction, and is
 * killed with {@code destroyForcibly()} at seeded random points and restarted from the stored
 * offsets, many times, then drains the input. After every kill the table must equal the plain-Java
 * model of exactly the records below the stored offsets (nothing lost, nothing doubled), and at the
 * end the model of the whole input.
 *
 * <p>Every fifth kill point is a zombie: the replacement driver starts while the old one still
 * runs, so both write the same batches; the helper must skip the loser's replays or refuse its
 * batch.
 *
 * <p>System properties: {@code streamstate.kafkaKills} (kills of the driver-side scenario, default
 * 6 in CI; the 20: set it), {@code streamstate.kafkaKillsPerPartition} (default 3), {@code
 * streamstate.kafkaSeed} (default 20), {@code streamstate.kafkaRecords} (default 20000).
 */
class ExactlyOnceKafkaKillIT {
  private static final int PARTITIONS = 4;
  private static final int KEYS = 50;

  /** Records per partition per second while kills happen: 50 per partition per 500 ms batch. */
  private static final String SLOW_RATE = "100";

  /** The draining run's rate. */
  private static final String FAST_RATE = "5000";

  private static EmbeddedPostgresFixture postgres;
  private static KafkaBrokerFixture kafka;

  @TempDir static Path tmp;

  @BeforeAll
  static void start() {
    postgres = EmbeddedPostgresFixture.start();
    kafka = KafkaBrokerFixture.start();
  }

  @AfterAll
  static void stop() {
    try {
      if (kafka != null) {
        kafka.close();
      }
    } finally {
      if (postgres != null) {
        postgres.close();
      }
    }
  }

  @Test
  void driverSideBatchesSurviveRepeatedKills() throws Exception {
    runScenario("driver", Integer.getInteger("streamstate.kafkaKills", 6));
  }

  @Test
  void perPartitionWritesSurviveRepeatedKills() throws Exception {
    runScenario("partition", Integer.getInteger("streamstate.kafkaKillsPerPartition", 3));
  }

  private void runScenario(String mode, int kills) throws Exception {
    long seed = Long.getLong("streamstate.kafkaSeed", 20L);
    int records = Integer.getInteger("streamstate.kafkaRecords", 20000);
    Random random = new Random(seed + mode.hashCode());
    String topic = "sums_" + mode;
    String app = "sums-" + mode;
    String url = postgres.createDatabase("kill_" + mode);
    kafka.createTopic(topic, PARTITIONS);
    // The tables exist before the first driver, which may be killed before it creates them.
    ExactlyOnceJdbc.forDirectStream(() -> DriverManager.getConnection(url), app);
    try (Connection c = DriverManager.getConnection(url);
        Statement s = c.createStatement()) {
      s.execute(KafkaSumsDriver.CREATE_SUMS_TABLE);
    }
    Input input = produce(topic, records, random);

    Counts counts = new Counts();
    long started = System.nanoTime();
    for (int kill = 0; kill < kills; kill++) {
      boolean zombie = kill % 5 == 4;
      int commitsBeforeKill = random.nextInt(3);
      int extraMillis = random.nextInt(800);
      try (Driver first = Driver.start(url, topic, app, mode, SLOW_RATE, tmp)) {
        first.awaitCommitsOrExit(commitsBeforeKill);
        if (zombie) {
          // The replacement starts while the old driver still runs: a zombie writing the same
          // batches.
          try (Driver second = Driver.start(url, topic, app, mode, SLOW_RATE, tmp)) {
            second.awaitCommitsOrExit(1 + random.nextInt(2));
            Thread.sleep(extraMillis);
            first.kill();
            second.kill();
            counts.add(second);
          }
          counts.zombies++;
        } else {
          Thread.sleep(extraMillis);
          first.kill();
        }
        counts.add(first);
      }
      counts.kills++;
      assertMatchesModel(url, app, topic, input, "after kill " + kill + " (" + mode + ")");
    }

    // A last run drains the input, then the table must equal the model of all of it.
    try (Driver last = Driver.start(url, topic, app, mode, FAST_RATE, tmp)) {
      Map<TopicPartition, Long> end = kafka.endOffsets(topic, PARTITIONS);
      await("the last driver to consume everything")
          .atMost(Duration.ofMinutes(5))
          .pollInterval(Duration.ofMillis(250))
          .until(
              () -> {
                last.failIfExited();
                return storedOffsets(url, app, topic).equals(end);
              });
      last.kill();
      counts.add(last);
    }
    Map<String, List<Long>> actual =
        assertMatchesModel(url, app, topic, input, "at the end (" + mode + ")");
    assertThat(actual).isEqualTo(input.model(kafka.endOffsets(topic, PARTITIONS)));
    assertThat(actual.values().stream().mapToLong(v -> v.get(1)).sum()).isEqualTo(records);
    System.out.printf(
        "ExactlyOnceKafkaKillIT[%s]: kills=%d (zombie overlaps %d), commits=%d (%s),"
            + " replays skipped=%d, drivers refused=%d, records=%d, keys=%d, seed=%d, %d s%n",
        mode,
        counts.kills,
        counts.zombies,
        counts.committed,
        mode.equals("driver") ? "batches" : "partition ranges",
        counts.skipped,
        counts.refused,
        records,
        actual.size(),
        seed,
        TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
    if (counts.refusal != null) {
      System.out.println("ExactlyOnceKafkaKillIT[" + mode + "]: first refusal: " + counts.refusal);
    }
  }

  /** The table must hold exactly the model of the records below the stored offsets. */
  private static Map<String, List<Long>> assertMatchesModel(
      String url, String app, String topic, Input input, String when) throws SQLException {
    // One snapshot of both tables: the driver may be committing concurrently (it is not here, but
    // the check would then still be exact).
    try (Connection c = DriverManager.getConnection(url)) {
      c.setAutoCommit(false);
      c.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
      Map<TopicPartition, Long> stored = storedOffsets(c, app, topic);
      Map<String, List<Long>> actual = sums(c);
      c.commit();
      assertThat(actual)
          .as("sums %s, stored offsets %s", when, stored)
          .isEqualTo(input.model(stored));
      return actual;
    }
  }

  private static Map<TopicPartition, Long> storedOffsets(String url, String app, String topic)
      throws SQLException {
    try (Connection c = DriverManager.getConnection(url)) {
      return storedOffsets(c, app, topic);
    }
  }

  private static Map<TopicPartition, Long> storedOffsets(Connection c, String app, String topic)
      throws SQLException {
    Map<TopicPartition, Long> stored = new HashMap<>();
    try (Statement s = c.createStatement();
        ResultSet rows =
            s.executeQuery(
                "SELECT topic, kafka_partition, until_offset FROM streamstate_kafka_offsets"
                    + " WHERE app = '"
                    + app
                    + "'")) {
      while (rows.next()) {
        if (rows.getString(1).equals(topic)) {
          stored.put(new TopicPartition(topic, rows.getInt(2)), rows.getLong(3));
        }
      }
    }
    return stored;
  }

  private static Map<String, List<Long>> sums(Connection c) throws SQLException {
    Map<String, List<Long>> sums = new TreeMap<>();
    try (Statement s = c.createStatement();
        ResultSet rows = s.executeQuery("SELECT k, total, records FROM kafka_sums")) {
      while (rows.next()) {
        sums.put(rows.getString(1), List.of(rows.getLong(2), rows.getLong(3)));
      }
    }
    return sums;
  }

  private static Input produce(String topic, int records, Random random) throws Exception {
    Input input = new Input(records);
    try (KafkaProducer<String, String> producer = kafka.newProducer()) {
      List<java.util.concurrent.Future<RecordMetadata>> sent = new ArrayList<>(records);
      for (int i = 0; i < records; i++) {
        input.keys[i] = "key-" + random.nextInt(KEYS);
        input.values[i] = random.nextInt(1000);
        sent.add(
            producer.send(
                new ProducerRecord<>(topic, input.keys[i], Integer.toString(input.values[i]))));
      }
      producer.flush();
      for (int i = 0; i < records; i++) {
        RecordMetadata m = sent.get(i).get();
        input.partitions[i] = m.partition();
        input.offsets[i] = m.offset();
      }
    }
    return input;
  }

  /** The produced records and where they landed: the plain-Java model. */
  private static final class Input {
    final String[] keys;
    final int[] values;
    final int[] partitions;
    final long[] offsets;

    Input(int records) {
      keys = new String[records];
      values = new int[records];
      partitions = new int[records];
      offsets = new long[records];
    }

    /** Per key: [sum of values, count] of the records below the given offsets. */
    Map<String, List<Long>> model(Map<TopicPartition, Long> below) {
      Map<Integer, Long> limit = new HashMap<>();
      below.forEach((tp, offset) -> limit.put(tp.partition(), offset));
      Map<String, long[]> sums = new TreeMap<>();
      for (int i = 0; i < keys.length; i++) {
        if (offsets[i] < limit.getOrDefault(partitions[i], 0L)) {
          long[] s = sums.computeIfAbsent(keys[i], k -> new long[2]);
          s[0] += values[i];
          s[1] += 1;
        }
      }
      Map<String, List<Long>> model = new TreeMap<>();
      sums.forEach((k, s) -> model.put(k, List.of(s[0], s[1])));
      return model;
    }
  }

  private static final class Counts {
    int kills;
    int zombies;
    int committed;
    int skipped;
    int refused;
    String refusal;

    void add(Driver d) {
      if (refusal == null) {
        refusal = d.refusal;
      }
      committed += d.committed.get();
      skipped += d.skipped.get();
      refused += d.refused.get();
    }
  }

  /**
   * A {@link KafkaSumsDriver} in a child JVM, its output counted; killed on close at the latest.
   */
  private static final class Driver implements AutoCloseable {
    final AtomicInteger committed = new AtomicInteger();
    final AtomicInteger skipped = new AtomicInteger();
    final AtomicInteger refused = new AtomicInteger();
    volatile String refusal;
    private ChildJvm child;

    static Driver start(String url, String topic, String app, String mode, String rate, Path tmp)
        throws IOException {
      Driver driver = new Driver();
      driver.child =
          ChildJvm.main(
                  KafkaSumsDriver.class,
                  List.of(
                      kafka.bootstrapServers(),
                      url,
                      topic,
                      String.valueOf(PARTITIONS),
                      app,
                      mode,
                      rate,
                      Files.createTempDirectory(tmp, "spark-local").toString()))
              .jvmArgs("-XX:+UseSerialGC")
              .onLine(driver::count)
              .start();
      return driver;
    }

    private void count(String line) {
      if (line.startsWith("COMMITTED")) {
        committed.incrementAndGet();
      } else if (line.startsWith("SKIPPED_REPLAY")) {
        skipped.incrementAndGet();
      } else if (line.contains(OffsetMismatchException.class.getName() + ":")) {
        // Spark logs the failure several times: count the driver once, keep the first message.
        if (refused.compareAndSet(0, 1)) {
          refusal = line.substring(line.indexOf(OffsetMismatchException.class.getName()));
        }
      }
    }

    /** Waits until this driver has committed n batches (a zombie may instead have been refused). */
    void awaitCommitsOrExit(int n) {
      await("driver " + child.pid() + " to commit " + n + " batches")
          .atMost(Duration.ofMinutes(3))
          .pollInterval(Duration.ofMillis(50))
          .until(
              () -> {
                if (!child.isAlive()) {
                  if (refused.get() > 0) {
                    return true; // A zombie refused with OffsetMismatchException: expected.
                  }
                  failIfExited();
                }
                return committed.get() + skipped.get() >= n;
              });
    }

    void failIfExited() {
      if (!child.isAlive()) {
        throw new AssertionError(
            "Driver " + child.pid() + " exited with " + child.exitValue() + ":\n" + child.tail());
      }
    }

    void kill() throws InterruptedException {
      child.kill();
    }

    @Override
    public void close() {
      child.close();
    }
  }
}
