package io.streamstate.dstream.demo;

import io.streamstate.dstream.jdbc.JdbcConnectionFactory;
import io.streamstate.dstream.testing.ChildJvm;
import io.streamstate.dstream.testing.EmbeddedPostgresFixture;
import io.streamstate.dstream.testing.KafkaBrokerFixture;
import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.DriverManager;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;

/**
 * The DStream demo, end to end on loopback: a Kafka broker (KRaft, in this process), a PostgreSQL
 * server (embedded), page views produced to Kafka, and the streaming job {@link PageViewsJob} in a
 * JVM of its own, killed with {@code kill -9} midway and started again (a new StreamingContext, no
 * metadata checkpoint). At the end, each page's total in PostgreSQL is checked against the views
 * produced: nothing lost, nothing counted twice.
 *
 * <pre>mvn -q -pl dstream -am verify -Pdstream-demo -DskipTests</pre>
 *
 * <p>Argument: the working directory (state, checkpoints, logs). Exits 1 if the check fails.
 */
public final class PageViewsDemo {
  private static final String TOPIC = "pageviews";
  private static final int PARTITIONS = 4;
  private static final int VIEWS = 60_000;
  private static final int PAGES = 40;

  private PageViewsDemo() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args.length > 0 ? args[0] : "target/dstream-demo").toAbsolutePath();
    deleteRecursively(dir);
    Files.createDirectories(dir);
    long seed = Long.getLong("demo.seed", 42);
    Random random = new Random(seed);
    long started = System.nanoTime();
    int exit;
    try (EmbeddedPostgresFixture postgres = EmbeddedPostgresFixture.start();
        KafkaBrokerFixture kafka = KafkaBrokerFixture.start()) {
      String url = postgres.createDatabase("demo");
      JdbcConnectionFactory connections = () -> DriverManager.getConnection(url);
      kafka.createTopic(TOPIC, PARTITIONS);
      say("Kafka broker (KRaft) at %s, PostgreSQL at %s", kafka.bootstrapServers(), url);

      Map<String, Long> produced = new TreeMap<>();
      Thread producer = producer(kafka, random.nextLong(), produced);
      producer.start();

      String[] job = {
        kafka.bootstrapServers(),
        url,
        TOPIC,
        Integer.toString(PARTITIONS),
        dir.resolve("state").toUri().toString(),
        dir.resolve("spark-checkpoint").toString(),
        dir.resolve("spark-local").toString(),
        dir.resolve("input-done").toString()
      };
      int killAfterBatches = 3 + random.nextInt(4);
      long killDelayMs = random.nextInt(900);
      say(
          "Run 1: the streaming job starts; it will be killed (kill -9) %d ms after its batch %d",
          killDelayMs, killAfterBatches);
      AtomicInteger firstBatches = new AtomicInteger();
      ChildJvm first = start(job, "run 1", dir.resolve("run-1.log"), firstBatches);
      long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
      while (firstBatches.get() < killAfterBatches && first.isAlive()) {
        if (System.nanoTime() > waitUntil) {
          throw new IllegalStateException("Run 1 made no progress; see run-1.log");
        }
        Thread.sleep(20);
      }
      Thread.sleep(killDelayMs);
      first.kill();
      say("Run 1 killed after %d batches", firstBatches.get());

      say("Run 2: a new JVM, a new StreamingContext; the state and the offsets resume");
      AtomicInteger secondBatches = new AtomicInteger();
      ChildJvm second = start(job, "run 2", dir.resolve("run-2.log"), secondBatches);
      producer.join();
      Map<TopicPartition, Long> end = kafka.endOffsets(TOPIC, PARTITIONS);
      Files.writeString(
          dir.resolve("input-done"),
          end.entrySet().stream()
              .map(e -> e.getKey().partition() + "=" + e.getValue())
              .collect(Collectors.joining(",")));
      if (!second.waitFor(150) || second.exitValue() != 0) {
        second.kill();
        throw new IllegalStateException(
            "Run 2 did not finish the input; see " + dir.resolve("run-2.log"));
      }
      say(
          "Run 2 finished the input after %d batches (exit %d)",
          secondBatches.get(), second.exitValue());

      Map<String, Long> totals = PageViewsJob.totals(connections);
      long lost = 0;
      long doubled = 0;
      for (String page : union(produced.keySet(), totals.keySet())) {
        long expected = produced.getOrDefault(page, 0L);
        long actual = totals.getOrDefault(page, 0L);
        if (actual < expected) {
          lost += expected - actual;
        } else {
          doubled += actual - expected;
        }
      }
      long views = produced.values().stream().mapToLong(Long::longValue).sum();
      say("Top pages: %s", PageViewsJob.topTrending(connections));
      say(
          "Totals check: %d views over %d pages produced; PostgreSQL holds %d; lost %d, doubled %d: %s",
          views,
          produced.size(),
          totals.values().stream().mapToLong(Long::longValue).sum(),
          lost,
          doubled,
          lost == 0 && doubled == 0 ? "OK, exactly once" : "FAILED");
      exit = lost == 0 && doubled == 0 ? 0 : 1;
    }
    say("Done in %d s", TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started));
    System.exit(exit);
  }

  /** Produces the page views over about 20 s, counting them per page. */
  private static Thread producer(KafkaBrokerFixture kafka, long seed, Map<String, Long> produced) {
    return new Thread(
        () -> {
          Random random = new Random(seed);
          try (KafkaProducer<String, String> producer = kafka.newProducer()) {
            for (int i = 0; i < VIEWS; i++) {
              // A skewed choice of pages: a few are popular.
              int page = (int) Math.floor(PAGES * Math.pow(random.nextDouble(), 2));
              String name = "page-" + page;
              producer.send(new ProducerRecord<>(TOPIC, "user-" + random.nextInt(5_000), name));
              produced.merge(name, 1L, Long::sum);
              if (i % 3_000 == 2_999) {
                producer.flush();
                Thread.sleep(1_000);
              }
            }
            producer.flush();
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        },
        "demo-producer");
  }

  /**
   * Starts the job in a JVM of its own, its output to {@code log}; echoes its STARTED and STOPPED
   * lines and counts its batches in {@code batches}.
   */
  private static ChildJvm start(String[] args, String run, Path log, AtomicInteger batches)
      throws Exception {
    return ChildJvm.main(PageViewsJob.class, List.of(args))
        .heap("1g")
        .log(log)
        .onLine(
            line -> {
              if (line.startsWith("BATCH")) {
                batches.incrementAndGet();
              } else if (line.startsWith("STARTED") || line.startsWith("STOPPED")) {
                say("  %s: %s", run, line);
              }
            })
        .start();
  }

  private static List<String> union(java.util.Set<String> a, java.util.Set<String> b) {
    java.util.TreeSet<String> all = new java.util.TreeSet<>(a);
    all.addAll(b);
    return new ArrayList<>(all);
  }

  private static void say(String format, Object... args) {
    System.out.println("[demo] " + String.format(format, args));
    System.out.flush();
  }

  private static void deleteRecursively(Path dir) throws Exception {
    if (!Files.exists(dir)) {
      return;
    }
    try (var paths = Files.walk(dir)) {
      paths.sorted(java.util.Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    }
  }
}
