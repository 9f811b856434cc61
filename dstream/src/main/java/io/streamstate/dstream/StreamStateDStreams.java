package io.streamstate.dstream;

import io.streamstate.core.storage.Storage;
import io.streamstate.dstream.state.BatchMarker;
import io.streamstate.dstream.state.BatchMarkers;
import io.streamstate.dstream.state.BatchRecord;
import io.streamstate.dstream.state.StateDriver;
import io.streamstate.dstream.state.StateLocation;
import io.streamstate.hadoop.HadoopStorages;
import java.io.Serializable;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import org.apache.spark.HashPartitioner;
import org.apache.spark.Partitioner;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.streaming.StateSpec;
import org.apache.spark.streaming.StateSpecImpl;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import org.apache.spark.streaming.dstream.DStream;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Incremental state for DStreams: {@link #mapWithState} has the semantics of Spark's {@code
 * mapWithState} (same {@link StateSpec}: mapping function, timeout, initial state, partitions), but
 * keeps each partition's state in streamstate's versioned store, committing one changelog per
 * partition per batch, instead of checkpointing the whole state RDD every few batches. The state is
 * found by its {@link Options} (location and name), not by Spark's metadata checkpoint: an
 * application whose code changed (a new {@code StreamingContext}, no metadata checkpoint) resumes
 * the state of the last completed batch.
 *
 * <pre>{@code
 * IncrementalMapWithState<String, Integer, String> counts =
 *     StreamStateDStreams.mapWithState(
 *         words,                                              // JavaPairDStream<String, Integer>
 *         StateSpec.function(countFn).timeout(Durations.minutes(30)),
 *         StreamStateDStreams.Options.at("hdfs:///apps/wordcount/state").name("counts"));
 * counts.print();
 * counts.stateSnapshots().print();
 * }</pre>
 *
 * See the module's README, "Incremental mapWithState", for the guarantees and limits.
 */
public final class StreamStateDStreams {
  private StreamStateDStreams() {}

  /**
   * Where a state lives and how to reach it. Immutable; each method returns a copy. Required: the
   * location ({@link #at}) and the {@link #name}.
   */
  public static final class Options implements Serializable {
    private static final long serialVersionUID = 1L;

    private final URI location;
    private final String name;
    private final Map<String, String> hadoopConf;
    private final String localDir;

    private Options(URI location, String name, Map<String, String> hadoopConf, String localDir) {
      this.location = location;
      this.name = name;
      this.hadoopConf = hadoopConf;
      this.localDir = localDir;
    }

    /** A state under {@code location}: a {@code file:}, {@code hdfs:} or {@code s3a:} URI. */
    public static Options at(String location) {
      return at(URI.create(Objects.requireNonNull(location, "location")));
    }

    /** As {@link #at(String)}. */
    public static Options at(URI location) {
      return new Options(Objects.requireNonNull(location, "location"), null, Map.of(), null);
    }

    /**
     * The state's name under the location (letters, digits, {@code .}, {@code _}, {@code -}): what
     * identifies it across runs and code changes. Two applications must never share a location and
     * name.
     */
    public Options name(String name) {
      return new Options(location, Objects.requireNonNull(name, "name"), hadoopConf, localDir);
    }

    /** A Hadoop setting of the location's file system ({@code fs.s3a.endpoint}, ...). */
    public Options hadoopConf(String key, String value) {
      Map<String, String> conf = new LinkedHashMap<>(hadoopConf);
      conf.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
      return new Options(location, name, Map.copyOf(conf), localDir);
    }

    /**
     * The executors' directory for the local RocksDB instances (default: the first of {@code
     * spark.local.dir}, else {@code java.io.tmpdir}).
     */
    public Options localDir(String localDir) {
      return new Options(location, name, hadoopConf, Objects.requireNonNull(localDir, "localDir"));
    }

    /**
     * The resolved location.
     *
     * @throws IllegalArgumentException the name is missing or invalid, or the location is not
     *     absolute
     */
    public StateLocation resolve() {
      if (name == null) {
        throw new IllegalArgumentException(
            "The state at " + location + " needs a name: Options.at(...).name(\"...\")");
      }
      return new StateLocation(location, name, hadoopConf, localDir);
    }
  }

  /**
   * Spark's {@code mapWithState} on incremental state: the same semantics, the state in the
   * location of {@code options}.
   *
   * @throws IllegalArgumentException the options are incomplete
   */
  public static <K, V, S, M> IncrementalMapWithState<K, S, M> mapWithState(
      JavaPairDStream<K, V> stream, StateSpec<K, V, S, M> spec, Options options) {
    StateLocation location = options.resolve();
    StateSpecImpl<K, V, S, M> impl = (StateSpecImpl<K, V, S, M>) spec;
    Partitioner partitioner =
        impl.getPartitioner().isDefined()
            ? impl.getPartitioner().get()
            : new HashPartitioner(stream.context().sparkContext().defaultParallelism());
    long timeoutMs =
        impl.getTimeoutInterval().isDefined() ? impl.getTimeoutInterval().get().milliseconds() : -1;
    JavaPairRDD<K, S> initial =
        impl.getInitialStateRDD().isDefined()
            ? JavaPairRDD.fromRDD(impl.getInitialStateRDD().get(), anyTag(), anyTag())
            : null;
    StateDriver<K, V, S, M> driver =
        new StateDriver<>(location, partitioner, impl.getFunction(), timeoutMs, initial);
    stream.context().addStreamingListener(driver.listener());
    JavaDStream<BatchRecord<M>> records = stream.transform(driver);
    return new IncrementalMapWithState<>(records, location);
  }

  /** As {@link #mapWithState(JavaPairDStream, StateSpec, Options)}, for a Scala {@code DStream}. */
  public static <K, V, S, M> IncrementalMapWithState<K, S, M> mapWithState(
      DStream<Tuple2<K, V>> stream, StateSpec<K, V, S, M> spec, Options options) {
    return mapWithState(
        JavaPairDStream.fromPairDStream(stream, StreamStateDStreams.<K>anyTag(), anyTag()),
        spec,
        options);
  }

  /**
   * The last completed batch of the state at {@code options}, if any: its version is the number of
   * batches applied to the state over all runs, which an application can use to resume its input
   * where the state stops (the next run's first batch writes version {@code version() + 1}).
   */
  public static Optional<BatchMarker> lastCompletedBatch(Options options) {
    StateLocation location = options.resolve();
    try (Storage storage = HadoopStorages.open(location.root(), location.configuration())) {
      return new BatchMarkers(storage, location).newest();
    }
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static <T> ClassTag<T> anyTag() {
    return (ClassTag) ClassTag$.MODULE$.AnyRef();
  }
}
