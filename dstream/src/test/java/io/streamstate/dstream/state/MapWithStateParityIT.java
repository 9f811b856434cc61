package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.ProcessResources;
import io.streamstate.dstream.IncrementalMapWithState;
import io.streamstate.dstream.StreamStateDStreams;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.Optional;
import org.apache.spark.api.java.function.Function4;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StateSpec;
import org.apache.spark.streaming.Time;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaMapWithStateDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.util.ManualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * The same input through Spark's own {@code mapWithState} (with {@code ssc.checkpoint}, its state
 * RDD checkpointed every batch so that its timeouts fire every batch, as ours do) and through
 * {@link StreamStateDStreams#mapWithState}: the same mapped records and the same state snapshots
 * after every batch, with timeouts, an initial state, removals, duplicate keys in a batch.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
class MapWithStateParityIT {
  private static final int BATCHES = 12;
  private static final long BATCH_MS = 1000;

  /** What each output collected, by name, then by batch time. */
  static final Map<String, Map<Long, List<String>>> SINKS = new ConcurrentHashMap<>();

  @TempDir Path dir;

  /** Counts; removes a key whose count reaches a multiple of 4; says when a key times out. */
  static final Function4<Time, String, Optional<Integer>, State<Integer>, Optional<String>> COUNT =
      (time, key, value, state) -> {
        if (state.isTimingOut()) {
          return Optional.of(key + ":timeout:" + state.get() + "@" + time.milliseconds());
        }
        int count = (state.exists() ? state.get() : 0) + value.get();
        if (count % 4 == 0) {
          state.remove();
          return Optional.of(key + ":removed:" + count);
        }
        state.update(count);
        return Optional.of(key + "=" + count);
      };

  static void collect(String sink, List<String> records, Time time) {
    List<String> sorted = new ArrayList<>(records);
    sorted.sort(null);
    SINKS.computeIfAbsent(sink, s -> new ConcurrentHashMap<>()).put(time.milliseconds(), sorted);
  }

  static void collectPairs(String sink, JavaPairRDD<String, Integer> rdd, Time time) {
    List<String> records = new ArrayList<>();
    for (Tuple2<String, Integer> kv : rdd.collect()) {
      records.add(kv._1() + "->" + kv._2());
    }
    collect(sink, records, time);
  }

  private static StateSpec<String, Integer, Integer, String> spec(
      JavaPairRDD<String, Integer> initial) {
    return StateSpec.function(COUNT)
        .numPartitions(3)
        .timeout(Durations.milliseconds(3 * BATCH_MS))
        .initialState(initial);
  }

  @Test
  void sameMappedRecordsAndStateAsSparksMapWithStateEveryBatch() {
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("MapWithStateParityIT")
            .set("spark.ui.enabled", "false")
            .set("spark.streaming.clock", ManualClock.class.getName())
            .set("spark.local.dir", dir.resolve("spark-local").toString());
    JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.milliseconds(BATCH_MS));
    StreamStateDStreams.Options options =
        StreamStateDStreams.Options.at(dir.resolve("state").toUri()).name("parity");
    long[] loads;
    try {
      ssc.checkpoint(dir.resolve("spark-checkpoint").toString());
      JavaPairRDD<String, Integer> initial =
          ssc.sparkContext()
              .parallelizePairs(Arrays.asList(new Tuple2<>("c1", 100), new Tuple2<>("init", 7)));
      JavaPairDStream<String, Integer> input =
          JavaPairDStream.fromJavaDStream(
              new JavaDStream<>(
                  new OrdinalInput(ssc.ssc(), OrdinalInput.Kind.PARITY, 1),
                  scala.reflect.ClassTag$.MODULE$.apply(Tuple2.class)));

      JavaMapWithStateDStream<String, Integer, Integer, String> spark =
          input.mapWithState(spec(initial));
      spark.checkpoint(Durations.milliseconds(BATCH_MS)); // timeouts fire on checkpointed batches
      spark.foreachRDD((rdd, time) -> collect("spark-mapped", rdd.collect(), time));
      spark.stateSnapshots().foreachRDD((rdd, time) -> collectPairs("spark-state", rdd, time));

      IncrementalMapWithState<String, Integer, String> ours =
          StreamStateDStreams.mapWithState(
              input.dstream(), spec(initial), options); // the Scala overload
      ours.foreachRDD((rdd, time) -> collect("ours-mapped", rdd.collect(), time));
      ours.stateSnapshots().foreachRDD((rdd, time) -> collectPairs("ours-state", rdd, time));

      ssc.start();
      ManualClock clock = (ManualClock) ssc.ssc().scheduler().clock();
      for (int batch = 1; batch <= BATCHES; batch++) {
        clock.advance(BATCH_MS);
        long time = batch * BATCH_MS;
        await()
            .atMost(Duration.ofSeconds(60))
            .until(
                () ->
                    List.of("spark-mapped", "spark-state", "ours-mapped", "ours-state").stream()
                        .allMatch(s -> SINKS.getOrDefault(s, Map.of()).containsKey(time)));
      }
      loads = PartitionStores.of(ProcessResources.shared()).loads(options.resolve());
    } finally {
      ssc.stop(true, false);
    }

    Map<Long, List<String>> sparkMapped = new TreeMap<>(SINKS.get("spark-mapped"));
    Map<Long, List<String>> sparkState = new TreeMap<>(SINKS.get("spark-state"));
    assertThat(new TreeMap<>(SINKS.get("ours-mapped"))).isEqualTo(sparkMapped);
    assertThat(new TreeMap<>(SINKS.get("ours-state"))).isEqualTo(sparkState);

    // The cases the comparison covers did happen.
    List<String> all = sparkMapped.values().stream().flatMap(List::stream).toList();
    assertThat(all).anyMatch(r -> r.startsWith("init:timeout:7"));
    assertThat(all).anyMatch(r -> r.startsWith("c5:timeout:"));
    assertThat(all).anyMatch(r -> r.startsWith("hot:removed:"));
    assertThat(sparkState.get(BATCH_MS)).contains("c1->100", "init->7");
    assertThat(sparkMapped).hasSize(BATCHES);

    // The warm path: after its first load (the empty state), each partition's store held the
    // version every later batch and snapshot loaded (one executor, tasks pinned to it).
    assertThat(loads[1]).as("durable loads").isEqualTo(3);
    assertThat(loads[0]).as("warm loads").isGreaterThanOrEqualTo(3L * (2 * BATCHES - 1));
  }
}
