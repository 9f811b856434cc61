package io.streamstate.spark.reliability;

import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.spark.reliability.StatefulTaskLog.Attempt;
import io.streamstate.spark.reliability.StatefulTaskLog.Launch;
import java.io.File;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import org.apache.spark.SparkExecutorInfo;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Speculative attempts of stateful tasks, on a cluster whose two executors are hosts of their own
 * ({@link LoopbackCluster}: Workers on 127.0.0.2 and 127.0.0.3, executor JVMs from {@link
 * SparkHome}, our provider from the shaded runtime jar alone). On one host Spark never launches
 * one: it does not run two attempts of a task on the same host.
 *
 * <p>From batch {@value #SLOW_FROM_BATCH} on, the first attempt of partition 0 of the
 * deduplication's stage stalls after its store loaded and before it commits ({@link
 * SlowFirstAttempt}, applied to the deduplicated rows); speculation settings that act within a
 * second make Spark launch a copy on the other host, which loads the store there, commits, and
 * wins; Spark then kills the stalled attempt. The test asserts, from {@link StatefulTaskLog}, that
 * speculative attempts of that stateful stage launched on the other host and succeeded with the
 * stores they loaded, and that the output equals the reference (the same query on {@code
 * HDFSBackedStateStoreProvider} on the same cluster, without the stall): 0 rows lost, 0 doubled.
 */
class SpeculationIT {
  private static final int BATCHES = 3;
  private static final long SLOW_FROM_BATCH = 1;
  private static final String[] WORKER_HOSTS = {"127.0.0.2", "127.0.0.3"};

  static final Path work = Sessions.newWorkDir(SpeculationIT.class);
  private static final Path input = work.resolve("input");
  private static LoopbackCluster cluster;
  private static SparkSession spark;
  private static StatefulTaskLog tasks;

  @BeforeAll
  static void startCluster() throws Exception {
    Path home = SparkHome.assemble();
    assertThat(System.getenv("SPARK_HOME"))
        .as("SPARK_HOME (set by the spark module's failsafe configuration)")
        .isEqualTo(home.toString());
    Path runtimeJar = Path.of(System.getProperty("streamstate.shadedJar"));
    assertThat(runtimeJar).exists();
    Path udfJar =
        ClassJar.write(work.resolve("udf/slow-first-attempt.jar"), SlowFirstAttempt.class);

    cluster = LoopbackCluster.start(work.resolve("workers"), 1024, WORKER_HOSTS);
    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    conf.put("spark.executor.extraClassPath", runtimeJar + File.pathSeparator + udfJar);
    conf.put("spark.executor.memory", "1g");
    conf.put("spark.task.maxFailures", "4");
    // A task is speculatable once one of its stage's two tasks finished and it ran 1.5 times as
    // long, and at least 1 s; checked every 100 ms. Progress-rate checks off: a stalled task's
    // rate is known from heartbeats only (every 10 s).
    conf.put("spark.speculation", "true");
    conf.put("spark.speculation.interval", "100ms");
    conf.put("spark.speculation.quantile", "0.5");
    conf.put("spark.speculation.multiplier", "1.5");
    conf.put("spark.speculation.minTaskRuntime", "1s");
    conf.put("spark.speculation.efficiency.enabled", "false");
    spark = ReliabilityQuery.start("SpeculationIT", cluster.masterUrl(), conf);
    SlowFirstAttempt.register(spark);
    tasks = new StatefulTaskLog();
    spark.sparkContext().addSparkListener(tasks);
    await().atMost(Duration.ofMinutes(2)).until(() -> executorHosts().size() == 2);
    ReliabilityQuery.writeInput(input, 23, BATCHES);
  }

  @AfterAll
  static void stopCluster() {
    if (spark != null) {
      spark.stop();
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void speculativeAttemptsOfStatefulTasksGiveTheReferenceOutput() throws Exception {
    assertThat(executorHosts()).as("executor hosts").containsExactlyInAnyOrder(WORKER_HOSTS);

    Path ref = work.resolve("reference");
    ReliabilityQuery.runToEnd(
        spark,
        ReliabilityQuery.HDFS,
        input,
        ref.resolve("checkpoint").toUri().toString(),
        ref.resolve("out"),
        slowFromBatch(Long.MAX_VALUE),
        0);
    List<String> reference = ReliabilityQuery.readOutput(ref.resolve("out"));
    assertThat(reference).hasSizeGreaterThan(10);

    Path ours = work.resolve("ours");
    int launchesBefore = tasks.launches().size();
    int endedBefore = tasks.ended().size();
    ReliabilityQuery.RunResult run =
        ReliabilityQuery.runToEnd(
            spark,
            ReliabilityQuery.OURS,
            input,
            ours.resolve("checkpoint").toUri().toString(),
            ours.resolve("out"),
            slowFromBatch(SLOW_FROM_BATCH),
            0);
    List<Launch> launches = tasks.launches().subList(launchesBefore, tasks.launches().size());
    List<Attempt> ended = tasks.ended().subList(endedBefore, tasks.ended().size());

    List<Launch> speculative =
        launches.stream()
            .filter(l -> l.speculative() && l.store().operator().equals("StreamingDeduplicate"))
            .toList();
    assertThat(speculative)
        .as(
            "speculative attempts of the deduplication's tasks (all stateful launches: %s)",
            launches)
        .isNotEmpty();
    for (Launch copy : speculative) {
      Optional<Launch> original =
          launches.stream()
              .filter(l -> l.stageId() == copy.stageId() && l.store().equals(copy.store()))
              .filter(l -> !l.speculative())
              .findFirst();
      assertThat(original).as("the attempt %s speculated on", copy).isPresent();
      assertThat(copy.host()).as("host of %s", copy).isNotEqualTo(original.get().host());
    }
    List<Attempt> speculativeWins =
        ended.stream().filter(a -> a.successful() && speculative.contains(a.launch())).toList();
    assertThat(speculativeWins)
        .as("speculative attempts of the deduplication's tasks that succeeded (ended: %s)", ended)
        .isNotEmpty()
        .allSatisfy(
            a ->
                assertThat(a.warmLoads() + a.durableLoads())
                    .as("stores loaded by %s", a)
                    .isPositive());

    System.out.printf(
        "speculation: %d speculative attempts of deduplication tasks launched (batches %s), %d"
            + " succeeded (cold loads %d); %d speculative attempts of other stateful tasks;"
            + " failed first attempts: %s; query restarts %d %s%n",
        speculative.size(),
        speculative.stream()
            .map(Launch::batch)
            .collect(Collectors.toCollection(java.util.TreeSet::new)),
        speculativeWins.size(),
        speculativeWins.stream().mapToLong(Attempt::coldLoads).sum(),
        launches.stream().filter(l -> l.speculative() && !speculative.contains(l)).count(),
        ended.stream()
            .filter(a -> !a.launch().speculative() && !a.successful())
            .map(a -> a.launch().store() + " batch " + a.launch().batch() + ": " + a.endReason())
            .toList(),
        run.restarts(),
        run.failures());
    List<String> actual = ReliabilityQuery.readOutput(ours.resolve("out"));
    ReliabilityQuery.Difference diff = ReliabilityQuery.Difference.of(reference, actual);
    assertThat(diff.lost()).as("rows lost").isEmpty();
    assertThat(diff.doubled()).as("rows doubled").isEmpty();
    assertThat(actual).containsExactlyElementsOf(reference);
  }

  /** {@link SlowFirstAttempt} on the deduplicated left rows, from batch {@code batch} on. */
  private static UnaryOperator<Dataset<Row>> slowFromBatch(long batch) {
    return left ->
        left.withColumn("lval", call_function(SlowFirstAttempt.FUNCTION, lit(batch), col("lval")));
  }

  /** Hosts of the executors (the driver, also listed, is on 127.0.0.1). */
  private static Set<String> executorHosts() {
    String driverHost = spark.sparkContext().getConf().get("spark.driver.host");
    return Arrays.stream(spark.sparkContext().statusTracker().getExecutorInfos())
        .map(SparkExecutorInfo::host)
        .filter(host -> !host.equals(driverHost))
        .collect(Collectors.toSet());
  }
}
