package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.state.OrdinalInput.Kind;
import io.streamstate.hadoop.MiniDfsFixture;
import io.streamstate.hadoop.S3ProxyFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
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
 * The state on HDFS (a MiniDFSCluster) and on S3A (an S3Proxy): a run, a stop, a run with another
 * graph; the outputs equal the model of the whole input.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
class MapWithStateStoragesIT {
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

  /** Four batches, a stop, three batches of another graph; outputs against the model. */
  private void runTwiceAndCheck(StreamStateDStreams.Options options) throws Exception {
    JavaSparkContext sc =
        new JavaSparkContext(
            new SparkConf()
                .setMaster("local[2]")
                .setAppName("MapWithStateStoragesIT")
                .set("spark.ui.enabled", "false")
                .set("spark.streaming.clock", ManualClock.class.getName())
                .set("spark.local.dir", dir.resolve("spark-local").toString()));
    try {
      String outDir = Files.createDirectories(dir.resolve("out")).toString();
      run(sc, options, outDir, 4, false);
      run(sc, options, outDir, 3, true);
      assertThat(lastCompleted(options)).isEqualTo(7);
      for (long ordinal = 1; ordinal <= 7; ordinal++) {
        assertThat(CountingApp.readOutput(outDir, ordinal))
            .as("output of batch ordinal %d", ordinal)
            .isEqualTo(CountingApp.expectedOutput(ordinal));
      }
    } finally {
      sc.stop();
    }
  }

  @Test
  void resumesOnHdfsWithChangedCode() throws Exception {
    try (MiniDfsFixture dfs = MiniDfsFixture.start(dir.resolve("dfs"))) {
      runTwiceAndCheck(
          StreamStateDStreams.Options.at(dfs.fileSystem().getUri() + "/apps/state").name("counts"));
      assertThat(dfs.fileSystem().exists(dfs.path("/apps/state/counts/batches/"))).isTrue();
    }
  }

  @Test
  void resumesOnS3aWithChangedCode() throws Exception {
    try (S3ProxyFixture s3 = S3ProxyFixture.start()) {
      StreamStateDStreams.Options options =
          StreamStateDStreams.Options.at("s3a://" + S3ProxyFixture.BUCKET + "/apps/state")
              .name("counts");
      for (Map.Entry<String, String> setting : s3.sharedClientSettings().entrySet()) {
        options = options.hadoopConf(setting.getKey(), setting.getValue());
      }
      runTwiceAndCheck(options);
      assertThat(s3.fileSystem().listStatus(S3ProxyFixture.path("apps/state/counts/batches/")))
          .isNotEmpty();
    }
  }
}
