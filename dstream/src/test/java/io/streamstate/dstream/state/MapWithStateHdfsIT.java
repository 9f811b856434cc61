package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.state.OrdinalInput.Kind;
import io.streamstate.hadoop.MiniDfsFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import org.apache.spark.util.ManualClock;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Tuple2;

/**
 * The state on HDFS (a MiniDFSCluster): a run, a stop, a run with another graph; the outputs equal
 * the model of the whole input.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
class MapWithStateHdfsIT {
  private static final long BATCH_MS = 1000;

  @TempDir Path dir;

  private static long lastCompleted(StreamStateDStreams.Options options) {
    return StreamStateDStreams.lastCompletedBatch(options).map(BatchMarker::version).orElse(0L);
  }

  private static void run(
      JavaSparkContext sc,
      StreamStateDStreams.Options options,
      String outDir,
      int batches,
      boolean changed) {
    long first = lastCompleted(options) + 1;
    JavaStreamingContext ssc = new JavaStreamingContext(sc, Durations.milliseconds(BATCH_MS));
    try {
      JavaPairDStream<String, Integer> input =
          JavaPairDStream.fromJavaDStream(
              new JavaDStream<>(
                  new OrdinalInput(ssc.ssc(), Kind.COUNTS, first),
                  scala.reflect.ClassTag$.MODULE$.apply(Tuple2.class)));
      if (changed) {
        input = input.mapToPair(kv -> new Tuple2<>(kv._1().intern(), kv._2()));
      }
      CountingApp.pipeline(input, options, 3, outDir, Long.MAX_VALUE);
      ssc.start();
      ManualClock clock = (ManualClock) ssc.ssc().scheduler().clock();
      for (int i = 0; i < batches; i++) {
        clock.advance(BATCH_MS);
        long version = first + i;
        await().atMost(Duration.ofSeconds(60)).until(() -> lastCompleted(options) >= version);
      }
    } finally {
      ssc.stop(false, false);
    }
  }

  @Test
  void resumesOnHdfsWithChangedCode() throws Exception {
    try (MiniDfsFixture dfs = MiniDfsFixture.start(dir.resolve("dfs"))) {
      JavaSparkContext sc =
          new JavaSparkContext(
              new SparkConf()
                  .setMaster("local[2]")
                  .setAppName("MapWithStateHdfsIT")
                  .set("spark.ui.enabled", "false")
                  .set("spark.streaming.clock", ManualClock.class.getName())
                  .set("spark.local.dir", dir.resolve("spark-local").toString()));
      try {
        String outDir = Files.createDirectories(dir.resolve("out")).toString();
        StreamStateDStreams.Options options =
            StreamStateDStreams.Options.at(dfs.fileSystem().getUri() + "/apps/state")
                .name("counts");
        run(sc, options, outDir, 4, false);
        run(sc, options, outDir, 3, true);
        assertThat(lastCompleted(options)).isEqualTo(7);
        for (long ordinal = 1; ordinal <= 7; ordinal++) {
          assertThat(CountingApp.readOutput(outDir, ordinal))
              .as("output of batch ordinal %d", ordinal)
              .isEqualTo(CountingApp.expectedOutput(ordinal));
        }
        assertThat(dfs.fileSystem().exists(dfs.path("/apps/state/counts/batches"))).isTrue();
      } finally {
        sc.stop();
      }
    }
  }
}
