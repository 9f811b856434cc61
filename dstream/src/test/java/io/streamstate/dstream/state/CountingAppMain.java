package io.streamstate.dstream.state;

import io.streamstate.dstream.StreamStateDStreams;
import io.streamstate.dstream.state.OrdinalInput.Kind;
import java.net.URI;
import org.apache.spark.SparkConf;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import scala.Tuple2;

/**
 * The driver that {@link MapWithStateRestartIT} starts in a child JVM and kills with {@code kill
 * -9}: {@link CountingApp} on the real clock, resuming its input after the state's last completed
 * batch. Arguments: state URI, state name, output directory, local directory, first ordinal whose
 * batch never completes.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
public final class CountingAppMain {
  private CountingAppMain() {}

  public static void main(String[] args) throws Exception {
    StreamStateDStreams.Options options =
        StreamStateDStreams.Options.at(URI.create(args[0])).name(args[1]).localDir(args[3]);
    long blockFrom = Long.parseLong(args[4]);
    long first =
        StreamStateDStreams.lastCompletedBatch(options).map(BatchMarker::version).orElse(0L) + 1;
    SparkConf conf =
        new SparkConf()
            .setMaster("local[2]")
            .setAppName("CountingAppMain")
            .set("spark.ui.enabled", "false");
    JavaStreamingContext ssc = new JavaStreamingContext(conf, Durations.milliseconds(300));
    JavaPairDStream<String, Integer> input =
        JavaPairDStream.fromJavaDStream(
            new JavaDStream<>(
                new OrdinalInput(ssc.ssc(), Kind.COUNTS, first),
                scala.reflect.ClassTag$.MODULE$.apply(Tuple2.class)));
    CountingApp.pipeline(input, options, 3, args[2], blockFrom);
    ssc.start();
    ssc.awaitTermination();
  }
}
