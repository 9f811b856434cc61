package io.streamstate.bench.dstream;

import io.streamstate.dstream.IncrementalMapWithState;
import io.streamstate.dstream.StreamStateDStreams;
import java.nio.file.Path;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.Optional;
import org.apache.spark.api.java.function.Function3;
import org.apache.spark.streaming.Durations;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StateSpec;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaMapWithStateDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.api.java.JavaStreamingContext;
import scala.Tuple2;

/**
 * The two implementations under test, each with how a fresh application builds its pipeline and how
 * a restarted one resumes: ours ({@link StreamStateDStreams#mapWithState}, a new context with the
 * same options) and Spark's ({@code JavaPairDStream.mapWithState} with {@code ssc.checkpoint},
 * resumed through {@code JavaStreamingContext.getOrCreate}).
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
enum Implementation {
  OURS("ours") {
    @Override
    JavaStreamingContext create(SparkConf conf, Cell cell, long base) {
      JavaStreamingContext ssc =
          new JavaStreamingContext(conf, Durations.milliseconds(cell.batchMs()));
      IncrementalMapWithState<Long, Long, Long> mapped =
          StreamStateDStreams.mapWithState(
              input(ssc, cell, base),
              spec(cell),
              StreamStateDStreams.Options.at(cell.stateDir().toUri()).name("sums"));
      mapped.foreachRDD(rdd -> rdd.count());
      return ssc;
    }

    @Override
    JavaStreamingContext resume(SparkConf conf, Cell cell, long lastOrdinal) {
      // A new application, no metadata checkpoint: the state continues from its last marker; the
      // input is told where its ordinals stand.
      return create(conf, cell, lastOrdinal);
    }
  },

  SPARK("spark") {
    @Override
    JavaStreamingContext create(SparkConf conf, Cell cell, long base) {
      JavaStreamingContext ssc =
          new JavaStreamingContext(conf, Durations.milliseconds(cell.batchMs()));
      ssc.checkpoint(cell.stateDir().toString());
      JavaMapWithStateDStream<Long, Long, Long, Long> mapped =
          input(ssc, cell, base)
              .mapWithState(spec(cell)); // state RDD checkpointed every 10 batches
      mapped.foreachRDD(rdd -> rdd.count());
      return ssc;
    }

    @Override
    JavaStreamingContext resume(SparkConf conf, Cell cell, long lastOrdinal) {
      // Spark's own recovery: the graph, the input's position and the state from the checkpoint.
      return JavaStreamingContext.getOrCreate(
          cell.stateDir().toString(),
          () -> {
            throw new IllegalStateException("No Spark checkpoint in " + cell.stateDir());
          });
    }
  };

  /** The running sum per key (a count: every value is 1); maps each record to the new sum. */
  static final Function3<Long, Optional<Long>, State<Long>, Long> SUM =
      (key, value, state) -> {
        long sum = (state.exists() ? state.get() : 0L) + value.get();
        state.update(sum);
        return sum;
      };

  private final String label;

  Implementation(String label) {
    this.label = label;
  }

  String label() {
    return label;
  }

  /** A fresh application whose input starts at ordinal {@code base + 1}; not started. */
  abstract JavaStreamingContext create(SparkConf conf, Cell cell, long base);

  /** The restarted application after a stop at ordinal {@code lastOrdinal}; not started. */
  abstract JavaStreamingContext resume(SparkConf conf, Cell cell, long lastOrdinal);

  static StateSpec<Long, Long, Long, Long> spec(Cell cell) {
    return StateSpec.function(SUM).numPartitions(cell.partitions());
  }

  static JavaPairDStream<Long, Long> input(JavaStreamingContext ssc, Cell cell, long base) {
    SeededUpdates updates =
        new SeededUpdates(
            ssc.ssc(), cell.keys(), cell.loadBatches(), cell.fraction(), cell.batchMs(), base);
    return JavaPairDStream.fromJavaDStream(
        new JavaDStream<Tuple2<Long, Long>>(
            updates, scala.reflect.ClassTag$.MODULE$.apply(Tuple2.class)));
  }

  /** One run's parameters and directory. */
  record Cell(
      Implementation implementation,
      int round,
      long keys,
      int loadBatches,
      int unmeasuredBatches,
      int measuredBatches,
      double fraction,
      long batchMs,
      int partitions,
      String serializerClass,
      Path dir) {
    Path stateDir() {
      return dir.resolve("state");
    }

    int steadyBatches() {
      return loadBatches + unmeasuredBatches + measuredBatches;
    }
  }
}
