package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.dstream.IncrementalMapWithState;
import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.state.OrdinalInput.Kind;
import io.streamstate.dstream.testing.ChildJvm;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.util.ManualClock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * A restarted application with changed code (a new StreamingContext with another DStream graph, no
 * metadata checkpoint, the same {@link StreamStateDStreams.Options}) continues the state from the
 * last completed batch: its outputs equal a model of the whole input, nothing lost, nothing counted
 * twice. Once after a stop, once after {@code kill -9} of a driver in a child JVM that had
 * committed batches it never marked complete.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
class MapWithStateRestartIT {
  private static final long BATCH_MS = 1000;
  private static JavaSparkContext sc;

  @TempDir static Path sparkLocal;
  @TempDir Path dir;

  /** The state snapshots of the resumed runs, by state name, then by batch time. */
  static final Map<String, Map<Long, List<String>>> SNAPSHOTS = new ConcurrentHashMap<>();

  @BeforeAll
  static void startSpark() {
    sc =
        new JavaSparkContext(
            new SparkConf()
                .setMaster("local[2]")
                .setAppName("MapWithStateRestartIT")
                .set("spark.ui.enabled", "false")
                .set("spark.streaming.clock", ManualClock.class.getName())
                .set("spark.local.dir", sparkLocal.toString()));
  }

  @AfterAll
  static void stopSpark() {
    if (sc != null) {
      sc.stop();
    }
  }

  private static JavaPairDStream<String, Integer> input(JavaStreamingContext ssc, long first) {
    return JavaPairDStream.fromJavaDStream(
        new JavaDStream<>(
            new OrdinalInput(ssc.ssc(), Kind.COUNTS, first),
            scala.reflect.ClassTag$.MODULE$.apply(Tuple2.class)));
  }

  private static long lastCompleted(StreamStateDStreams.Options options) {
    return StreamStateDStreams.lastCompletedBatch(options).map(BatchMarker::version).orElse(0L);
  }

  /**
   * A new run with another graph: an extra map and filter stage before the state, and a second
   * output operation. Runs {@code batches} batches from the state's last completed one.
   */
  private void resumeWithChangedCode(
      StreamStateDStreams.Options options, String name, String outDir, int batches) {
    long resumeAt = lastCompleted(options);
    JavaStreamingContext ssc = new JavaStreamingContext(sc, Durations.milliseconds(BATCH_MS));
    try {
      JavaPairDStream<String, Integer> changed =
          input(ssc, resumeAt + 1)
              .mapToPair(kv -> new Tuple2<>(kv._1().trim(), kv._2()))
              .filter(kv -> !kv._1().isEmpty());
      changed.count().foreachRDD(rdd -> rdd.count());
      IncrementalMapWithState<String, Integer, String> counts =
          CountingApp.pipeline(changed, options, 3, outDir, Long.MAX_VALUE);
      counts
          .stateSnapshots()
          .foreachRDD(
              (rdd, time) -> {
                List<String> state = new ArrayList<>();
                rdd.collect().forEach(kv -> state.add(kv._1() + "->" + kv._2()));
                state.sort(null);
                SNAPSHOTS
                    .computeIfAbsent(name, n -> new ConcurrentHashMap<>())
                    .put(time.milliseconds(), state);
              });
      ssc.start();
      ManualClock clock = (ManualClock) ssc.ssc().scheduler().clock();
      for (int i = 1; i <= batches; i++) {
        clock.advance(BATCH_MS);
        long version = resumeAt + i;
        await().atMost(Duration.ofSeconds(60)).until(() -> lastCompleted(options) >= version);
      }
    } finally {
      ssc.stop(false, false);
    }
  }

  private static void assertOutputsMatchTheModel(String outDir, long lastOrdinal) throws Exception {
    for (long ordinal = 1; ordinal <= lastOrdinal; ordinal++) {
      assertThat(CountingApp.readOutput(outDir, ordinal))
          .as("output of batch ordinal %d", ordinal)
          .isEqualTo(CountingApp.expectedOutput(ordinal));
    }
  }

  @Test
  void resumesAfterAStopWithChangedCodeAndRefusesAnotherPartitionCount() throws Exception {
    String outDir = Files.createDirectories(dir.resolve("out")).toString();
    StreamStateDStreams.Options options =
        StreamStateDStreams.Options.at(dir.resolve("state").toUri()).name("counts");

    // Run 1: four batches, then a stop.
    JavaStreamingContext first = new JavaStreamingContext(sc, Durations.milliseconds(BATCH_MS));
    try {
      CountingApp.pipeline(input(first, 1), options, 3, outDir, Long.MAX_VALUE);
      first.start();
      ManualClock clock = (ManualClock) first.ssc().scheduler().clock();
      for (long version = 1; version <= 4; version++) {
        clock.advance(BATCH_MS);
        long v = version;
        await().atMost(Duration.ofSeconds(60)).until(() -> lastCompleted(options) >= v);
      }
    } finally {
      first.stop(false, false);
    }
    assertThat(lastCompleted(options)).isEqualTo(4);

    // Run 2: another graph, no metadata checkpoint; four more batches.
    resumeWithChangedCode(options, "stop", outDir, 4);
    assertThat(lastCompleted(options)).isEqualTo(8);
    assertOutputsMatchTheModel(outDir, 8);
    Map<Long, List<String>> snapshots = SNAPSHOTS.get("stop");
    long lastTime = snapshots.keySet().stream().mapToLong(Long::longValue).max().orElseThrow();
    assertThat(snapshots.get(lastTime)).isEqualTo(CountingApp.expectedState(8));

    // Run 3: another partition count is refused, naming both counts.
    JavaStreamingContext third = new JavaStreamingContext(sc, Durations.milliseconds(BATCH_MS));
    try {
      CountingApp.pipeline(input(third, 9), options, 4, outDir, Long.MAX_VALUE);
      third.start();
      ((ManualClock) third.ssc().scheduler().clock()).advance(BATCH_MS);
      assertThatThrownBy(() -> third.awaitTerminationOrTimeout(60_000))
          .hasStackTraceContaining("has 3 partitions")
          .hasStackTraceContaining("asks for 4");
    } finally {
      third.stop(false, false);
    }
    assertThat(lastCompleted(options)).isEqualTo(8);
  }

  @Test
  void resumesAfterTheDriverIsKilledWithBatchesCommittedButNotComplete() throws Exception {
    String outDir = Files.createDirectories(dir.resolve("out")).toString();
    Path stateDir = dir.resolve("state");
    StreamStateDStreams.Options options =
        StreamStateDStreams.Options.at(stateDir.toUri()).name("killed");
    long blockFrom = 5;

    // A driver in a child JVM whose batch 5 never completes: batches 5, 6, ... commit their state
    // at job generation, but are never marked complete. Then kill -9.
    Process child =
        ChildJvm.main(
                CountingAppMain.class,
                List.of(
                    stateDir.toUri().toString(),
                    "killed",
                    outDir,
                    dir.resolve("child-local").toString(),
                    Long.toString(blockFrom)))
            .heap("1g")
            .log(dir.resolve("child.log"))
            .start()
            .process();
    try {
      await()
          .atMost(Duration.ofSeconds(120))
          .until(() -> !child.isAlive() || highestCommittedVersion(stateDir, "killed") >= 7);
      assertThat(child.isAlive())
          .as("child driver alive (see %s)", dir.resolve("child.log"))
          .isTrue();
    } finally {
      child.destroyForcibly(); // SIGKILL
      child.waitFor();
    }
    long marked = lastCompleted(options);
    assertThat(marked).isEqualTo(blockFrom - 1);
    assertThat(highestCommittedVersion(stateDir, "killed")).isGreaterThan(marked + 1);
    assertThat(Files.exists(Path.of(outDir, "blocked"))).isTrue();

    // A new run with changed code resumes at the last completed batch: batches 5, 6, ... again.
    resumeWithChangedCode(options, "killed", outDir, 4);
    assertThat(lastCompleted(options)).isEqualTo(marked + 4);
    assertOutputsMatchTheModel(outDir, marked + 4);
    Map<Long, List<String>> snapshots = SNAPSHOTS.get("killed");
    long lastTime = snapshots.keySet().stream().mapToLong(Long::longValue).max().orElseThrow();
    assertThat(snapshots.get(lastTime)).isEqualTo(CountingApp.expectedState(marked + 4));
  }

  /** The mapped records of each batch, computed again after the state RDD's blocks were dropped. */
  static final Map<Long, List<String>> RECOMPUTED = new ConcurrentHashMap<>();

  @Test
  void aBatchRecomputedAfterItsCachedStateWasLostCommitsAgainWithoutDoubling() throws Exception {
    String outDir = Files.createDirectories(dir.resolve("out")).toString();
    Path stateDir = dir.resolve("state");
    StreamStateDStreams.Options options =
        StreamStateDStreams.Options.at(stateDir.toUri()).name("recomputed");
    JavaStreamingContext ssc = new JavaStreamingContext(sc, Durations.milliseconds(BATCH_MS));
    try {
      IncrementalMapWithState<String, Integer, String> counts =
          CountingApp.pipeline(input(ssc, 1), options, 3, outDir, Long.MAX_VALUE);
      // A second output drops the batch's persisted state RDD (as a lost executor would), then
      // reads the mapped records again: every partition applies the batch again, on the same base.
      counts.foreachRDD(
          (rdd, time) -> {
            org.apache.spark.rdd.RDD<?> state = rdd.rdd().dependencies().head().rdd();
            assertThat(state.getStorageLevel().useMemory()).isTrue();
            state.unpersist(true);
            List<String> again = new ArrayList<>(rdd.collect());
            again.sort(null);
            RECOMPUTED.put(time.milliseconds(), again);
          });
      ssc.start();
      ManualClock clock = (ManualClock) ssc.ssc().scheduler().clock();
      for (long version = 1; version <= 4; version++) {
        clock.advance(BATCH_MS);
        long v = version;
        await().atMost(Duration.ofSeconds(60)).until(() -> lastCompleted(options) >= v);
      }
    } finally {
      ssc.stop(false, false);
    }
    assertOutputsMatchTheModel(outDir, 4);
    for (long ordinal = 1; ordinal <= 4; ordinal++) {
      assertThat(RECOMPUTED.get(ordinal * BATCH_MS))
          .as("batch %d computed again", ordinal)
          .isEqualTo(CountingApp.expectedOutput(ordinal));
    }
    // Each partition committed every version twice; the markers name one commit of each.
    LocalStorage storage = new LocalStorage(stateDir);
    for (int partition = 0; partition < 3; partition++) {
      StoreLayout layout =
          new StoreLayout("recomputed/partitions/" + String.format("%05d/", partition));
      assertThat(storage.list(layout.changelogsOf(2))).hasSize(2);
    }
  }

  /** The highest version any partition of the state committed (changelogs in its storage). */
  private static long highestCommittedVersion(Path stateDir, String name) {
    long max = 0;
    if (!Files.exists(stateDir)) {
      return 0;
    }
    for (FileInfo file : new LocalStorage(stateDir).list(name + "/partitions/")) {
      StoreLayout.ChangelogName changelog = StoreLayout.parseChangelog(file.name());
      if (changelog != null) {
        max = Math.max(max, changelog.version());
      }
    }
    return max;
  }
}
