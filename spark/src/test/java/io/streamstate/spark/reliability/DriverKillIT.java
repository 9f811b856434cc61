package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.spark.SuiteDepth;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * kill -9 of the driver JVM in the middle of a batch, then a restart on the same checkpoint: the
 * output equals the fault-free reference (Spark's HDFS-backed provider, in this JVM). The query
 * runs in a child JVM ({@link ReliabilityDriverMain}) on {@code faultfs://} (HDFS-like: create with
 * overwrite=false, no faults installed) and waits at a chosen point to be killed:
 *
 * <ul>
 *   <li>{@code join:1}: inside a join task of batch 1, before any of its state commits;
 *   <li>{@code sink:1}, {@code sink:2}: after the batch's sink wrote its file, so every state store
 *       of the batch has committed, but before Spark wrote the batch to its commit log. The restart
 *       runs the batch again and commits each state version a second time (docs/decisions.md, item
 *       11).
 * </ul>
 *
 * <p>{@code sink:1} runs in the extended suite only ({@code -Pextended}): {@code sink:2} kills at
 * the same point of a batch that also has state from before.
 */
class DriverKillIT {
  private static final int BATCHES = 3;
  private static final Duration CHILD_TIMEOUT = Duration.ofMinutes(4);

  static final Path work = Sessions.newWorkDir(DriverKillIT.class);
  private static final Path input = work.resolve("input");
  private static List<String> reference;

  /** Driver JVMs this class started: none may outlive a test, whatever it ended in. */
  private final List<ChildJvm> started = new java.util.ArrayList<>();

  @AfterEach
  void killLeftoverDrivers() throws InterruptedException {
    for (ChildJvm child : started) {
      if (child.process().isAlive()) {
        child.killHard();
      }
    }
  }

  @BeforeAll
  static void runReference() throws Exception {
    ReliabilityQuery.writeInput(input, 11, BATCHES);
    SparkSession spark =
        ReliabilityQuery.start(
            "DriverKillIT-reference", "local[2]", ReliabilityQuery.sessionConf(work));
    try {
      Path ref = work.resolve("reference");
      ReliabilityQuery.runToEnd(
          spark,
          ReliabilityQuery.HDFS,
          input,
          ref.resolve("checkpoint").toUri().toString(),
          ref.resolve("out"),
          ReliabilityQuery.NO_FAULTS,
          0);
      reference = ReliabilityQuery.readOutput(ref.resolve("out"));
    } finally {
      spark.stop();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"join:1", "sink:1", "sink:2"})
  void driverKilledMidBatchRestartsToTheReferenceOutput(String hold) throws Exception {
    assumeTrue(
        !hold.equals("sink:1") || SuiteDepth.extended(),
        "sink:1 runs with -Pextended (sink:2 kills at the same point, on state from before)");
    Path dir = work.resolve(hold.replace(':', '-'));
    Files.createDirectories(dir);
    Path checkpointDir = dir.resolve("checkpoint");
    String checkpoint = FaultInjectingFileSystem.uriOf(checkpointDir);
    Path output = dir.resolve("out");
    Path marker = dir.resolve("holding");
    long batch = Long.parseLong(hold.substring(hold.indexOf(':') + 1));

    ChildJvm first = startDriver(dir, checkpoint, output, hold, marker, "first.log");
    await()
        .atMost(CHILD_TIMEOUT)
        .pollInterval(Duration.ofMillis(100))
        .until(() -> Files.exists(marker) || !first.process().isAlive());
    assertThat(first.process().isAlive())
        .as("driver reached the kill point; its output:%n%s", first.output())
        .isTrue();
    first.killHard();

    // Where the kill hit: the batch is planned (offsets) and not committed (commits).
    assertThat(checkpointDir.resolve("offsets").resolve(String.valueOf(batch))).exists();
    assertThat(checkpointDir.resolve("commits").resolve(String.valueOf(batch))).doesNotExist();
    // The aggregation's commits of version batch + 1: changelogs, or members of segments (group
    // commit, on by default).
    // Spark numbers stateful operators from the sink down: 0 aggregation, 1 join, 2 dedup; the
    // aggregation runs in the batch's last stage.
    List<String> aggregateCommits = commitsOf(checkpointDir.resolve("state"), "0/0/", batch + 1);
    if (hold.startsWith("sink:")) {
      assertThat(aggregateCommits).as("state of the batch committed before the kill").isNotEmpty();
    } else {
      assertThat(aggregateCommits).as("state of the batch not committed at the kill").isEmpty();
    }

    ChildJvm second =
        startDriver(dir, checkpoint, output, "none", dir.resolve("unused"), "second.log");
    boolean exited = second.process().waitFor(CHILD_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
    if (!exited) {
      second.killHard();
    }
    assertThat(exited).as("restarted driver finished; output:%n%s", second.output()).isTrue();
    assertThat(second.process().exitValue())
        .as("restarted driver's exit code; output:%n%s", second.output())
        .isZero();
    assertThat(second.output()).contains("DRIVER DONE");
    assertThat(ReliabilityQuery.readOutput(output)).containsExactlyElementsOf(reference);
  }

  private ChildJvm startDriver(
      Path dir, String checkpoint, Path output, String hold, Path marker, String log)
      throws Exception {
    ChildJvm child =
        ChildJvm.start(
            ReliabilityDriverMain.class,
            dir.resolve(log),
            ReliabilityQuery.OURS,
            input.toString(),
            checkpoint,
            output.toString(),
            dir.resolve("driver-work-" + log.replace(".log", "")).toString(),
            hold,
            marker.toString());
    started.add(child);
    return child;
  }

  /** The commits of {@code version} of one store: its changelog files and its segment members. */
  static List<String> commitsOf(Path stateDir, String storePrefix, long version) {
    List<String> found = new java.util.ArrayList<>();
    for (Path p : CorruptionIT.files(stateDir.resolve(storePrefix), CorruptionIT.Kind.CHANGELOG)) {
      if (CorruptionIT.versionOf(p) == version) {
        found.add(p.toString());
      }
    }
    LocalStorage storage = new LocalStorage(stateDir);
    SegmentCatalog catalog = SegmentCatalog.of(ProcessResources.shared(), storage);
    for (var f : catalog.list().getOrDefault(version, List.of())) {
      for (var e : catalog.index(f.name().name()).entries()) {
        if (e.storePrefix().equals(storePrefix)) {
          found.add(f.name().name());
        }
      }
    }
    return found;
  }
}
