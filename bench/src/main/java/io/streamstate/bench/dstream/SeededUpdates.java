package io.streamstate.bench.dstream;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.SplittableRandom;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.streaming.StreamingContext;
import org.apache.spark.streaming.Time;
import org.apache.spark.streaming.dstream.InputDStream;
import scala.Option;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/**
 * The benchmark's input, a pure function of the batch's ordinal ({@code base + batchTime /
 * batchMs}), generated on the executors: ordinals 1..{@code loadBatches} each hold one slice of
 * every key (the warm-up that loads the whole key space), every later ordinal holds each key with
 * probability {@code fraction}, drawn by an RNG seeded with the ordinal. Every record's value is 1,
 * so the state (a running sum) is the key's count.
 *
 * <p>Deterministic whatever the run: Spark's recovered context recomputes a batch from its
 * checkpointed copy of this stream and gets the same records; our restarted application gives a new
 * instance the ordinal its state stopped at as {@code base}.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
final class SeededUpdates extends InputDStream<Tuple2<Long, Long>> {
  private static final long serialVersionUID = 1L;

  /** Input partitions per batch (generation runs as a task per slice). */
  static final int SLICES = 4;

  private final long keys;
  private final int loadBatches;
  private final double fraction;
  private final long batchMs;
  private final long base;

  @SuppressWarnings({"unchecked", "rawtypes"})
  SeededUpdates(
      StreamingContext ssc, long keys, int loadBatches, double fraction, long batchMs, long base) {
    super(ssc, (scala.reflect.ClassTag) ClassTag$.MODULE$.apply(Tuple2.class));
    this.keys = keys;
    this.loadBatches = loadBatches;
    this.fraction = fraction;
    this.batchMs = batchMs;
    this.base = base;
  }

  /** The ordinal of the batch of time {@code batchTime} (1 for the first batch of a fresh run). */
  long ordinal(long batchTime) {
    return base + batchTime / batchMs;
  }

  /**
   * Records of one slice of an ordinal: keys {@code [slice*keys/SLICES, (slice+1)*keys/SLICES)}.
   */
  static Iterator<Tuple2<Long, Long>> records(
      long keys, int loadBatches, double fraction, long ordinal, int slice) {
    long from = slice * keys / SLICES;
    long to = (slice + 1) * keys / SLICES;
    List<Tuple2<Long, Long>> out = new ArrayList<>();
    if (ordinal <= loadBatches) {
      // Warm-up: this ordinal's share of the slice, so that the load batches together hold every
      // key.
      long span = to - from;
      long lo = from + (ordinal - 1) * span / loadBatches;
      long hi = from + ordinal * span / loadBatches;
      for (long k = lo; k < hi; k++) {
        out.add(new Tuple2<>(k, 1L));
      }
    } else {
      SplittableRandom rng = new SplittableRandom(ordinal * 1_000_003L + slice);
      for (long k = from; k < to; k++) {
        if (rng.nextDouble() < fraction) {
          out.add(new Tuple2<>(k, 1L));
        }
      }
    }
    return out.iterator();
  }

  @Override
  public void start() {}

  @Override
  public void stop() {}

  @Override
  public Option<RDD<Tuple2<Long, Long>>> compute(Time validTime) {
    long ordinal = ordinal(validTime.milliseconds());
    long k = keys;
    int load = loadBatches;
    double f = fraction;
    List<Integer> slices = new ArrayList<>();
    for (int s = 0; s < SLICES; s++) {
      slices.add(s);
    }
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(context().sparkContext());
    return Option.apply(
        jsc.parallelize(slices, SLICES).flatMap(s -> records(k, load, f, ordinal, s)).rdd());
  }
}
