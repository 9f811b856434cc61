package io.streamstate.dstream.state;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import org.apache.spark.streaming.StreamingContext;
import org.apache.spark.streaming.Time;
import org.apache.spark.streaming.dstream.InputDStream;
import scala.Option;
import scala.Tuple2;
import scala.reflect.ClassTag$;

/**
 * A receiver-free input whose n-th batch (n counted from {@code firstOrdinal}) holds {@link
 * #data(Kind, long)} of that ordinal: deterministic, whatever the batch's time, so that a restarted
 * application can resume the input where its state stops.
 */
@SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams
final class OrdinalInput extends InputDStream<Tuple2<String, Integer>> {
  private static final long serialVersionUID = 1L;

  enum Kind {
    /** Idle gaps of every length, duplicates in a batch, a key every batch. */
    PARITY,
    /** Keys k0..k5 and "all": each at most once a batch, value = the batch's ordinal. */
    COUNTS
  }

  private final Kind kind;
  private long nextOrdinal;

  @SuppressWarnings({"unchecked", "rawtypes"})
  OrdinalInput(StreamingContext ssc, Kind kind, long firstOrdinal) {
    super(ssc, (scala.reflect.ClassTag) ClassTag$.MODULE$.apply(Tuple2.class));
    this.kind = kind;
    this.nextOrdinal = firstOrdinal;
  }

  static List<Tuple2<String, Integer>> data(Kind kind, long ordinal) {
    List<Tuple2<String, Integer>> out = new ArrayList<>();
    if (kind == Kind.PARITY) {
      out.add(new Tuple2<>("hot", 1));
      if (ordinal % 2 == 0) {
        out.add(new Tuple2<>("hot", 2));
      }
      for (int j = 0; j < 6; j++) {
        if (ordinal % (j + 2) == 0) {
          out.add(new Tuple2<>("c" + j, j + 1));
        }
      }
    } else {
      out.add(new Tuple2<>("all", (int) ordinal));
      for (int j = 0; j < 6; j++) {
        if ((ordinal + j) % 3 != 0) {
          out.add(new Tuple2<>("k" + j, (int) ordinal));
        }
      }
    }
    return out;
  }

  @Override
  public void start() {}

  @Override
  public void stop() {}

  @Override
  public Option<RDD<Tuple2<String, Integer>>> compute(Time validTime) {
    long ordinal;
    synchronized (this) {
      ordinal = nextOrdinal++;
    }
    JavaSparkContext jsc = JavaSparkContext.fromSparkContext(context().sparkContext());
    return Option.apply(jsc.parallelize(data(kind, ordinal), 2).rdd());
  }
}
