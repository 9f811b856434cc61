package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.spark.StreamStateMetrics;
import io.streamstate.spark.reliability.StatefulTaskLog.Attempt;
import io.streamstate.spark.reliability.StatefulTaskLog.Launch;
import io.streamstate.spark.reliability.StatefulTaskLog.Store;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StateOperatorProgress;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Executors in JVMs of their own, as on a cluster: Spark's {@code local-cluster[2,1,1024]} master
 * (a standalone Master and two Workers in this JVM, each Worker launching its executor as a child
 * process from the Spark home {@link SparkHome} assembles). Executors get our provider from the
 * shaded runtime jar alone ({@code spark.executor.extraClassPath}), as a user's cluster would.
 *
 * <p>In batch 1, the executor that starts a stateful task of a store it holds (its attempt of that
 * store was the last to succeed, in batch 0) is killed with SIGKILL. Spark runs its tasks elsewhere
 * and the Worker starts a new executor. The test asserts, from the task metrics of {@link
 * StatefulTaskLog}, that each store the killed executor held was next loaded cold (from durable
 * storage, by an instance that held none of its versions) on another executor; that stores which
 * stayed on their executor loaded warm, never cold; that the query's progress reports those cold
 * loads; and that the output equals the reference (the same query on {@code
 * HDFSBackedStateStoreProvider} on the same cluster, without a kill).
 */
class ExecutorKillIT {
  private static final int BATCHES = 3;
  private static final long KILL_IN_BATCH = 1;

  static final Path work = Sessions.newWorkDir(ExecutorKillIT.class);
  private static final Path input = work.resolve("input");
  private static SparkSession spark;
  private static String appId;
  private static StatefulTaskLog tasks;

  /** The kill: the executor, its pid, the launch it was killed at, the attempts ended before. */
  private record Kill(String executor, long pid, Launch at, int endedBefore) {}

  private static final AtomicReference<Kill> killed = new AtomicReference<>();
  private static final AtomicInteger executorsRemoved = new AtomicInteger();
  private static final AtomicInteger executorsAdded = new AtomicInteger();
  private static final AtomicLong coldLoadsInProgress = new AtomicLong();
  private static volatile boolean armed;

  @BeforeAll
  static void startCluster() throws Exception {
    Path home = SparkHome.assemble();
    assertThat(System.getenv("SPARK_HOME"))
        .as("SPARK_HOME (set by the spark module's failsafe configuration)")
        .isEqualTo(home.toString());
    Path runtimeJar = Path.of(System.getProperty("streamstate.shadedJar"));
    assertThat(runtimeJar).exists();

    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    conf.put("spark.executor.extraClassPath", runtimeJar.toString());
    conf.put("spark.executor.memory", "1g");
    conf.put("spark.task.maxFailures", "4");
    // Lost executors are replaced; the application is not failed after a few losses.
    conf.put("spark.deploy.maxExecutorRetries", "10");
    spark = ReliabilityQuery.start("ExecutorKillIT", "local-cluster[2,1,1024]", conf);
    appId = spark.sparkContext().applicationId();
    // The log first: the kill decision reads what it recorded of the same event.
    tasks = new StatefulTaskLog(ExecutorKillIT::killIfHolding);
    spark.sparkContext().addSparkListener(tasks);
    spark.sparkContext().addSparkListener(new ExecutorCount());
    spark.streams().addListener(new ColdLoadsInProgress());
    await()
        .atMost(Duration.ofMinutes(2))
        .until(() -> spark.sparkContext().getExecutorMemoryStatus().size() == 3);
    ReliabilityQuery.writeInput(input, 23, BATCHES);
  }

  @AfterAll
  static void stopCluster() {
    if (spark != null) {
      spark.stop();
    }
  }

  @Test
  void killedExecutorsStoresLoadColdElsewhereAndOutputIsTheReference() throws Exception {
    Path ref = work.resolve("reference");
    ReliabilityQuery.runToEnd(
        spark,
        ReliabilityQuery.HDFS,
        input,
        ref.resolve("checkpoint").toUri().toString(),
        ref.resolve("out"),
        ReliabilityQuery.NO_FAULTS,
        0);
    List<String> reference = ReliabilityQuery.readOutput(ref.resolve("out"));
    assertThat(reference).hasSizeGreaterThan(10);
    assertThat(executorJvms()).as("executor JVMs of this application").hasSize(2);

    Path ours = work.resolve("ours");
    armed = true;
    ReliabilityQuery.RunResult run =
        ReliabilityQuery.runToEnd(
            spark,
            ReliabilityQuery.OURS,
            input,
            ours.resolve("checkpoint").toUri().toString(),
            ours.resolve("out"),
            ReliabilityQuery.NO_FAULTS,
            3);
    armed = false;

    Kill kill = killed.get();
    assertThat(kill)
        .as(
            "an executor was killed at a stateful task of batch %d of a store it held",
            KILL_IN_BATCH)
        .isNotNull();
    assertThat(executorsRemoved.get()).as("Spark saw the executor go").isPositive();
    List<Attempt> ended = tasks.ended();
    List<Attempt> after = ended.subList(kill.endedBefore(), ended.size());

    // Every store of our run whose last successful attempt before the kill ran on the killed
    // executor: the stores it held.
    Map<Store, String> lastExecutor = new HashMap<>();
    for (Attempt a : ended.subList(0, kill.endedBefore())) {
      if (a.successful() && a.launch().run().equals(kill.at().run())) {
        lastExecutor.put(a.launch().store(), a.launch().executor());
      }
    }
    List<Store> held = new ArrayList<>();
    lastExecutor.forEach(
        (store, executor) -> {
          if (executor.equals(kill.executor())) {
            held.add(store);
          }
        });
    assertThat(held).as("stores the killed executor held").contains(kill.at().store());

    // Each was next run, successfully, on another executor; those loads are cold. A successful
    // attempt reports the loads since its executor's previous commit of the store, and a failed
    // attempt's metrics are dropped: once in three runs (beside a fetch failure; not traced
    // further) a store's first successful attempt elsewhere loaded warm. So every store must have
    // moved, and cold loads must show.
    Map<Store, Attempt> reloads = new LinkedHashMap<>();
    for (Store store : held) {
      Optional<Attempt> next =
          after.stream()
              .filter(a -> a.successful() && a.launch().store().equals(store))
              .filter(a -> !a.launch().executor().equals(kill.executor()))
              .findFirst();
      assertThat(next).as("a successful attempt of %s after the kill", store).isPresent();
      reloads.put(store, next.get());
    }
    assertThat(reloads.values())
        .as("first attempts elsewhere of the stores the killed executor held")
        .anySatisfy(a -> assertThat(a.coldLoads()).as("cold loads of %s", a).isPositive());

    // The metric tells the cases apart: an attempt on the executor whose attempt of the same store
    // (same run) ended last, successfully, loaded warm.
    List<Attempt> stayed = new ArrayList<>();
    Map<String, Attempt> previous = new HashMap<>();
    for (int i = 0; i < ended.size(); i++) {
      Attempt a = ended.get(i);
      String key = a.launch().run() + "/" + a.launch().store();
      Attempt before = previous.put(key, a);
      if (before != null
          && before.successful()
          && a.successful()
          && before.launch().executor().equals(a.launch().executor())
          && i >= kill.endedBefore()) {
        stayed.add(a);
      }
    }
    assertThat(stayed)
        .as("attempts after the kill on the executor that held the store")
        .isNotEmpty();
    assertThat(stayed)
        .allSatisfy(
            a -> {
              assertThat(a.coldLoads()).as("cold loads of %s", a).isZero();
              assertThat(a.warmLoads()).as("warm loads of %s", a).isPositive();
            });

    // The query's progress reports them (summed per batch over each operator's partitions).
    long reloadedCold = reloads.values().stream().mapToLong(Attempt::coldLoads).sum();
    await()
        .atMost(Duration.ofSeconds(30))
        .untilAsserted(
            () ->
                assertThat(coldLoadsInProgress.get())
                    .as("%s in the query's progress", StreamStateMetrics.COLD_LOADS.name())
                    .isGreaterThanOrEqualTo(reloadedCold));

    System.out.printf(
        "executor kill: killed executor %s (pid %d) at task %d (%s, batch %d), which held %d"
            + " stores; next ran on %s; %d attempts stayed warm; progress cold loads %d;"
            + " executors removed %d, added %d; query restarts %d %s%n",
        kill.executor(),
        kill.pid(),
        kill.at().taskId(),
        kill.at().store(),
        kill.at().batch(),
        held.size(),
        reloads.values().stream()
            .map(a -> "executor " + a.launch().executor() + " (cold " + a.coldLoads() + ")")
            .toList(),
        stayed.size(),
        coldLoadsInProgress.get(),
        executorsRemoved.get(),
        executorsAdded.get(),
        run.restarts(),
        run.failures());
    List<String> actual = ReliabilityQuery.readOutput(ours.resolve("out"));
    ReliabilityQuery.Difference diff = ReliabilityQuery.Difference.of(reference, actual);
    assertThat(diff.lost()).as("rows lost").isEmpty();
    assertThat(diff.doubled()).as("rows doubled").isEmpty();
    assertThat(actual).containsExactlyElementsOf(reference);
  }

  /**
   * Kills the executor of {@code launch} if it is a launch of batch {@value #KILL_IN_BATCH} of a
   * store whose last successful attempt ran on the same executor: one that holds the store.
   */
  private static void killIfHolding(Launch launch) {
    if (!armed || killed.get() != null || launch.batch() != KILL_IN_BATCH) {
      return;
    }
    if (!tasks.lastSuccessfulExecutor(launch).equals(Optional.of(launch.executor()))) {
      return;
    }
    int endedBefore = tasks.ended().size();
    executorJvm(launch.executor())
        .ifPresent(
            p -> {
              p.destroyForcibly();
              killed.set(new Kill(launch.executor(), p.pid(), launch, endedBefore));
            });
  }

  private static List<ProcessHandle> executorJvms() {
    return ProcessHandle.allProcesses()
        .filter(
            p ->
                p.info()
                    .commandLine()
                    .map(c -> c.contains("CoarseGrainedExecutorBackend") && c.contains(appId))
                    .orElse(false))
        .toList();
  }

  private static Optional<ProcessHandle> executorJvm(String executorId) {
    return executorJvms().stream()
        .filter(
            p ->
                p.info()
                    .commandLine()
                    .map(c -> c.contains("--executor-id " + executorId + " "))
                    .orElse(false))
        .findFirst();
  }

  private static final class ExecutorCount extends SparkListener {
    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
      executorsRemoved.incrementAndGet();
    }

    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded added) {
      executorsAdded.incrementAndGet();
    }
  }

  /** Sums {@code streamstateColdLoads} over the stateful operators of our run's progress. */
  private static final class ColdLoadsInProgress extends StreamingQueryListener {
    @Override
    public void onQueryStarted(QueryStartedEvent event) {}

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
      if (!armed) {
        return;
      }
      for (StateOperatorProgress op : event.progress().stateOperators()) {
        Long cold = op.customMetrics().get(StreamStateMetrics.COLD_LOADS.name());
        if (cold != null) {
          coldLoadsInProgress.addAndGet(cold);
        }
      }
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {}
  }
}
