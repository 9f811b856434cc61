package io.streamstate.spark.reliability;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.LocalSpaceLimit;
import io.streamstate.spark.StreamStateConf;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Stream;
import org.apache.spark.ExceptionFailure;
import org.apache.spark.TaskFailedReason;
import org.apache.spark.api.plugin.DriverPlugin;
import org.apache.spark.api.plugin.ExecutorPlugin;
import org.apache.spark.api.plugin.SparkPlugin;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The executors' local state directory runs out of space between two runs of the reliability query
 * (issue 22, item 6). In {@code local[2,4]} (4 attempts per task), the second run's stores load
 * from durable storage, and their restores find no room: each such task attempt fails with an error
 * saying that the local directory is out of space and naming the setting that moves it. Space
 * returns when the first of them has failed ({@link SpaceReturns}, an executor plugin, which Spark
 * calls before it reports the failure and schedules the retry); the retries rebuild the stores from
 * durable storage, and the output equals the reference of Spark's HDFS-backed provider exactly (0
 * lost, 0 doubled).
 *
 * <p>No space is the test's limit ({@link LocalSpaceLimit}: RocksDB's own space limit and a check
 * on our copies), not a small file system, which needs privileges to mount; {@code
 * LocalDiskFullTest} in testkit runs the engine on a real full tmpfs where mounting is allowed.
 */
class LocalDiskFullIT {
  private static final int BATCHES = 3;

  static final Path work = Sessions.newWorkDir(LocalDiskFullIT.class);
  private static final Path allInput = work.resolve("input-all");
  private static final Path input = work.resolve("input");
  private static SparkSession spark;
  private static List<String> reference;
  private static LocalSpaceLimit limit;

  /** The failures of task attempts that found the local directory full, as Spark reported them. */
  static final List<String> diskFullFailures = new CopyOnWriteArrayList<>();

  /** Whether the next disk-full failure gives the space back (set by the test). */
  static volatile boolean returnSpaceOnFailure;

  /**
   * Gives the space back when the first task attempt fails for lack of it: Spark calls {@code
   * onTaskFailed} in the executor before it reports the failure to the scheduler, so the retry
   * finds room (an executor plugin: in local mode, in this JVM).
   */
  public static final class SpaceReturns implements SparkPlugin {
    @Override
    public DriverPlugin driverPlugin() {
      return null;
    }

    @Override
    public ExecutorPlugin executorPlugin() {
      return new ExecutorPlugin() {
        @Override
        public void onTaskFailed(TaskFailedReason reason) {
          String text = reason.toErrorString();
          if (reason instanceof ExceptionFailure && text.contains("Local disk full")) {
            diskFullFailures.add(text);
            if (returnSpaceOnFailure) {
              returnSpaceOnFailure = false;
              limit.liftForTests();
            }
          }
        }
      };
    }
  }

  @BeforeAll
  static void startSparkAndRunReference() throws Exception {
    // RocksDB instances opened from now on count against the limit (none is set yet).
    limit = LocalSpaceLimit.trackForTests(ProcessResources.shared());
    Map<String, String> conf = ReliabilityQuery.sessionConf(work);
    conf.put("spark.plugins", SpaceReturns.class.getName());
    // Snapshots with SST files: a restore copies them into the local directory.
    conf.put(StreamStateConf.SNAPSHOT_INLINE_SST_MAX_BYTES, "0");
    spark = ReliabilityQuery.start("LocalDiskFullIT", "local[2,4]", conf);
    ReliabilityQuery.writeInput(allInput, 23, BATCHES);
    Path ref = work.resolve("reference");
    ReliabilityQuery.runToEnd(
        spark,
        ReliabilityQuery.HDFS,
        allInput,
        ref.resolve("checkpoint").toUri().toString(),
        ref.resolve("out"),
        ReliabilityQuery.NO_FAULTS,
        0);
    reference = ReliabilityQuery.readOutput(ref.resolve("out"));
  }

  @AfterAll
  static void stopSpark() {
    if (limit != null) {
      limit.liftForTests();
    }
    if (spark != null) {
      spark.stop();
    }
    // Later test classes of this JVM get a process owner without the limit's tracking.
    ProcessResources.restartForTests(false);
  }

  @Test
  void tasksThatFindTheLocalDirectoryFullFailClearlyAndTheirRetriesRecoverExactly()
      throws Exception {
    assertThat(reference).hasSizeGreaterThan(10);
    Path ours = work.resolve("ours");
    Path checkpoint = ours.resolve("checkpoint");
    Path output = ours.resolve("out");

    // First run, with room: batches 0 and 1, until the stores have snapshots.
    copyInput(0);
    copyInput(1);
    Optional<Exception> first =
        ReliabilityQuery.runOnce(
            spark, ReliabilityQuery.OURS, input, checkpoint.toUri().toString(), output);
    assertThat(first).isEmpty();
    await().atMost(Duration.ofMinutes(1)).until(() -> snapshotCount(checkpoint) > 0);

    // No room: the second run's stores are new instances, which load from durable storage.
    limit.limitForTests(1);
    returnSpaceOnFailure = true;
    for (int b = 2; b < BATCHES; b++) {
      copyInput(b);
    }
    Optional<Exception> second =
        ReliabilityQuery.runOnce(
            spark, ReliabilityQuery.OURS, input, checkpoint.toUri().toString(), output);

    System.out.printf(
        "local disk full: %d task attempts failed for lack of local space; first: %s%n",
        diskFullFailures.size(),
        diskFullFailures.isEmpty() ? "none" : firstLine(diskFullFailures.get(0)));
    assertThat(second)
        .as("the query went on once space returned (the failed tasks were retried)")
        .isEmpty();
    assertThat(returnSpaceOnFailure).as("a task found the local directory full").isFalse();
    assertThat(diskFullFailures).isNotEmpty();
    Path localRoot = work.resolve("streamstate-local");
    for (String failure : diskFullFailures) {
      assertThat(failure)
          .contains("Local disk full")
          .contains("is out of space")
          .contains("local directory " + localRoot)
          .contains(StreamStateConf.LOCAL_DIR)
          .contains("LocalDiskFullException");
    }

    ReliabilityQuery.Difference difference =
        ReliabilityQuery.Difference.of(reference, ReliabilityQuery.readOutput(output));
    System.out.printf(
        "local disk full: %d lost, %d doubled of %d reference rows%n",
        difference.lost().size(), difference.doubled().size(), reference.size());
    assertThat(difference.none())
        .as("lost %s, doubled %s", difference.lost(), difference.doubled())
        .isTrue();
  }

  private static String firstLine(String text) {
    int nl = text.indexOf('\n');
    return nl < 0 ? text : text.substring(0, nl);
  }

  private static long snapshotCount(Path checkpoint) throws IOException {
    try (Stream<Path> all = Files.walk(checkpoint)) {
      return all.filter(p -> p.getFileName().toString().endsWith(".snapshot")).count();
    }
  }

  private static void copyInput(int batch) throws IOException {
    for (String side : List.of("left", "right")) {
      Path from = allInput.resolve(side).resolve(String.format("part-%05d.json", batch));
      Path to = input.resolve(side).resolve(from.getFileName());
      Files.createDirectories(to.getParent());
      Files.copy(from, to, StandardCopyOption.COPY_ATTRIBUTES);
    }
  }
}
