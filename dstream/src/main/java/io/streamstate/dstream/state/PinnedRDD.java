package io.streamstate.dstream.state;

import java.util.List;
import org.apache.spark.Partition;
import org.apache.spark.Partitioner;
import org.apache.spark.TaskContext;
import org.apache.spark.rdd.RDD;
import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.reflect.ClassTag;

/**
 * Its parent, each partition preferring the executor that applied the previous batch to that
 * partition's store, where the store's local instance still holds the version this batch loads (the
 * warm path; elsewhere a task loads from storage). Locations in Spark's format for cached blocks
 * ({@code executor_<host>_<executorId>}); a partition without one keeps its parent's.
 */
final class PinnedRDD<T> extends RDD<T> {
  private static final long serialVersionUID = 1L;

  private final ClassTag<T> tag;

  /** Used on the driver only, by the scheduler. */
  private final transient String[] locations;

  PinnedRDD(RDD<T> parent, String[] locations, ClassTag<T> tag) {
    super(parent, tag);
    this.tag = tag;
    this.locations = locations;
  }

  /** Where this process's tasks run, as {@link PinnedRDD} locations name it. */
  static String currentExecutor() {
    org.apache.spark.SparkEnv env = org.apache.spark.SparkEnv.get();
    if (env == null || env.blockManager() == null) {
      return null;
    }
    var id = env.blockManager().blockManagerId();
    return "executor_" + id.host() + "_" + id.executorId();
  }

  @Override
  public Iterator<T> compute(Partition split, TaskContext context) {
    return firstParent(tag).iterator(split, context);
  }

  @Override
  public Partition[] getPartitions() {
    return firstParent(tag).partitions();
  }

  @Override
  public Seq<String> getPreferredLocations(Partition split) {
    String location = locations == null ? null : locations[split.index()];
    if (location == null) {
      return firstParent(tag).preferredLocations(split);
    }
    return CollectionConverters.asScala(List.of(location)).toList();
  }

  @Override
  public Option<Partitioner> partitioner() {
    return firstParent(tag).partitioner();
  }
}
