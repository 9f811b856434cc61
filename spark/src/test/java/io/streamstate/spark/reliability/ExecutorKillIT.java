package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerExecutorAdded;
import org.apache.spark.scheduler.SparkListenerExecutorRemoved;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskStart;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Executors in JVMs of their own, as on a cluster: Spark's {@code local-cluster[2,1,1024]} master
 * (a standalone Master and two Workers in this JVM, each Worker launching its executor as a child
 * process from a Spark home). The Spark home is assembled under {@code target/spark-home}: {@code
 * jars/} links to Spark's jars (this module's dependencies without our own), and executors get our
 * provider from the shaded runtime jar alone ({@code spark.executor.extraClassPath}), as a user's
 * cluster would. One executor JVM is killed with SIGKILL while a task of a batch runs on it; Spark
 * runs its tasks elsewhere, the Worker starts a new executor, and the output equals the reference
 * (the same query on {@code HDFSBackedStateStoreProvider} on the same cluster, without a kill).
 *
 * <p>Needs {@code SPARK_HOME} (the assembled home) and {@code SPARK_SCALA_VERSION} in this JVM's
 * environment, set by the module's failsafe configuration: a Worker takes its Spark home from
 * {@code SPARK_HOME}, and Spark 4.2's launcher ({@code AbstractCommandBuilder.buildClassPath})
 * needs the Scala version, from {@code SPARK_SCALA_VERSION} or a Spark build tree.
 */
class ExecutorKillIT {
  private static final int BATCHES = 3;
  private static final long KILL_IN_BATCH = 1;
  private static final int KILL_AT_TASK = 3;

  static final Path work = Sessions.newWorkDir(ExecutorKillIT.class);
  private static final Path input = work.resolve("input");
  private static SparkSession spark;
  private static String appId;

  private static final Map<Integer, Long> batchOfStage = new ConcurrentHashMap<>();
  private static final AtomicInteger tasksStartedInKillBatch = new AtomicInteger();
  private static final AtomicReference<String> killed = new AtomicReference<>();
  private static final AtomicInteger executorsRemoved = new AtomicInteger();
  private static final AtomicInteger executorsAdded = new AtomicInteger();
  private static volatile boolean armed;

  @BeforeAll
  static void startCluster() throws Exception {
    Path home = assembleSparkHome();
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
    spark.sparkContext().addSparkListener(new KillListener());
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

  /**
   * {@code target/spark-home}: RELEASE, {@code jars/} linking Spark's jars from the Maven build.
   */
  static Path assembleSparkHome() throws IOException {
    Path home = Path.of("target", "spark-home").toAbsolutePath();
    Path jars = home.resolve("jars");
    Files.createDirectories(jars);
    String classpath =
        Files.readString(
                Path.of(System.getProperty("streamstate.sparkClasspathFile")),
                StandardCharsets.UTF_8)
            .trim();
    for (String entry : classpath.split(File.pathSeparator)) {
      Path jar = Path.of(entry);
      Path link = jars.resolve(jar.getFileName());
      if (entry.endsWith(".jar") && !Files.exists(link, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
        Files.createSymbolicLink(link, jar);
      }
    }
    Files.writeString(
        home.resolve("RELEASE"),
        "Spark jars of the streamstate-spark test classpath (assembled by ExecutorKillIT)\n");
    return home;
  }

  @Test
  void killedExecutorJvmGivesTheReferenceOutput() throws Exception {
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

    assertThat(killed.get())
        .as("an executor JVM was killed in batch %d", KILL_IN_BATCH)
        .isNotNull();
    assertThat(executorsRemoved.get()).as("Spark saw the executor go").isPositive();
    System.out.printf(
        "executor kill: killed %s; executors removed %d, added %d; query restarts %d %s%n",
        killed.get(), executorsRemoved.get(), executorsAdded.get(), run.restarts(), run.failures());
    assertThat(ReliabilityQuery.readOutput(ours.resolve("out")))
        .containsExactlyElementsOf(reference);
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

  /** Kills the executor running the {@value #KILL_AT_TASK}th task started in batch 1. */
  private static final class KillListener extends SparkListener {
    @Override
    public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
      String batch =
          submitted.properties() == null
              ? null
              : submitted.properties().getProperty("streaming.sql.batchId");
      if (batch != null) {
        batchOfStage.put(submitted.stageInfo().stageId(), Long.parseLong(batch));
      }
    }

    @Override
    public void onTaskStart(SparkListenerTaskStart start) {
      Long batch = batchOfStage.get(start.stageId());
      if (!armed || batch == null || batch != KILL_IN_BATCH) {
        return;
      }
      if (tasksStartedInKillBatch.incrementAndGet() != KILL_AT_TASK) {
        return;
      }
      String executor = start.taskInfo().executorId();
      executorJvm(executor)
          .ifPresent(
              p -> {
                p.destroyForcibly();
                killed.set(
                    "executor "
                        + executor
                        + " (pid "
                        + p.pid()
                        + ") at task "
                        + start.taskInfo().id()
                        + " of stage "
                        + start.stageId());
              });
    }

    @Override
    public void onExecutorRemoved(SparkListenerExecutorRemoved removed) {
      executorsRemoved.incrementAndGet();
    }

    @Override
    public void onExecutorAdded(SparkListenerExecutorAdded added) {
      executorsAdded.incrementAndGet();
    }
  }
}
