package io.streamstate.dstream;

import io.streamstate.core.ProcessResources;
import io.streamstate.dstream.state.BatchRecord;
import io.streamstate.dstream.state.PartitionStores;
import io.streamstate.dstream.state.PartitionUpdate;
import io.streamstate.dstream.state.StateLocation;
import java.util.List;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.streaming.api.java.JavaDStream;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import scala.Tuple2;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * The result of {@link StreamStateDStreams#mapWithState}: the stream of what the mapping function
 * returned (this stream itself, as Spark's {@code JavaMapWithStateDStream}) and {@link
 * #stateSnapshots()}, the whole state after each batch.
 *
 * @param <K> the key type
 * @param <S> the state type
 * @param <M> the mapped type
 */
public final class IncrementalMapWithState<K, S, M> extends JavaDStream<M> {
  private final JavaDStream<BatchRecord<M>> records;
  private final StateLocation location;

  IncrementalMapWithState(JavaDStream<BatchRecord<M>> records, StateLocation location) {
    super(
        records.flatMap(r -> r.mapped().iterator()).dstream(), IncrementalMapWithState.<M>anyTag());
    this.records = records;
    this.location = location;
  }

  /**
   * The whole state after each batch, one pair per key: each partition's committed version read
   * back from its store (warm: the local instance that just committed it). Reads every state of
   * every partition each batch it is computed; use it for small states, tests and debugging.
   */
  public JavaPairDStream<K, S> stateSnapshots() {
    StateLocation where = location;
    return records.transformToPair(
        (JavaRDD<BatchRecord<M>> rdd) ->
            rdd.mapPartitionsToPair(
                it -> {
                  if (!it.hasNext()) {
                    return java.util.Collections.<Tuple2<K, S>>emptyIterator();
                  }
                  BatchRecord<M> record = it.next();
                  List<Tuple2<K, S>> all =
                      PartitionStores.of(ProcessResources.shared())
                          .withStore(
                              where,
                              TaskContext.getPartitionId(),
                              store ->
                                  PartitionUpdate.<K, S>readAll(
                                      store, record.version(), record.commitId()));
                  return all.iterator();
                },
                true));
  }

  @SuppressWarnings({"rawtypes", "unchecked"})
  private static <T> ClassTag<T> anyTag() {
    return (ClassTag) ClassTag$.MODULE$.AnyRef();
  }
}
