package io.streamstate.dstream.state;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.storage.Storage;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import org.apache.spark.Partitioner;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.storage.StorageLevel;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StreamingContext;
import org.apache.spark.streaming.Time;
import org.apache.spark.streaming.scheduler.OutputOperationInfo;
import org.apache.spark.streaming.scheduler.StreamingListener;
import org.apache.spark.streaming.scheduler.StreamingListenerBatchCompleted;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Function4;
import scala.Option;
import scala.Tuple2;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The driver's side of an incremental {@code mapWithState}: the transform that turns each batch's
 * input into the batch's state RDD, and the listener that marks batches complete.
 *
 * <h2>Versions (the protocol)</h2>
 *
 * Versions are batch ordinals: the n-th batch applied to a state (counted over every run of the
 * application) reads version n-1 and writes version n.
 *
 * <ol>
 *   <li>d1, start: the newest {@link BatchMarker} (version m, one commit id per partition) is the
 *       resume point; none means version 0, the empty state, plus the spec's initial state. Its
 *       partition count must equal the partitioner's.
 *   <li>d2, each batch (at job generation): plan version m+1 on exactly the commits of m, and run
 *       one job that applies the batch to every partition (the state RDD, persisted, then forced).
 *       Every partition commits m+1 with a new commit id, which the job returns. The batch's output
 *       operations then read the persisted RDD.
 *   <li>d3: the next batch plans m+2 on the commit ids the job of m+1 returned: in memory, not yet
 *       marked; it does not wait for the outputs of m+1.
 *   <li>d4, batch completed (all output operations succeeded): write the marker of m+1 with its
 *       commit ids, create-if-absent. Markers are written in batch order.
 *   <li>d5: each partition's task of m+2 prefers the executor that committed its m+1 (Spark's
 *       locality, as for a cached block): its store there holds m+1 already, so the load reads
 *       nothing from storage.
 * </ol>
 *
 * A driver that dies anywhere leaves partitions that committed versions past the newest marker; the
 * next run re-plans those versions on the marker's commits, and loads of a version always name
 * their commit, so the dead run's commits are never read: no batch is applied twice to the state,
 * and every partition resumes from one completed batch. A task retried, speculated or recomputed (a
 * lost cached block) loads the same base commit and commits the same content under another id;
 * which of them the marker names does not matter.
 *
 * <p>Serializable because a DStream graph with checkpointing on is serialized with its functions;
 * its run-time fields are transient, so a graph restored from Spark's metadata checkpoint starts
 * again at d1.
 */
public final class StateDriver<K, V, S, M>
    implements Function2<JavaPairRDD<K, V>, Time, JavaRDD<BatchRecord<M>>> {
  private static final long serialVersionUID = 1L;
  private static final Logger LOG = LoggerFactory.getLogger(StateDriver.class);

  private final StateLocation location;
  private final Partitioner partitioner;
  private final Function4<Time, K, Option<V>, State<S>, Option<M>> function;
  private final long timeoutMs;
  private final transient JavaPairRDD<K, S> initialState;

  /** The version and commits the next batch loads (d1, d3); null until the first batch. */
  private transient BatchMarker base;

  /** Whether {@link #base} is version 0 (no marker yet). */
  private transient boolean fromEmpty;

  /** The executor that committed each partition's previous version (d5), or null. */
  private transient String[] executors;

  /**
   * How many versions the state may run ahead of the newest batch whose outputs finished (job
   * generation does not wait for outputs, d3). Retention keeps the newest 100 versions' files
   * ({@code StoreOptions}); a run that died far ahead of its last marker would otherwise leave a
   * marker whose base retention had deleted. Past this lead, job generation waits (backpressure).
   */
  static final int MAX_LEAD = 10;

  /** The newest version whose batch finished (its outputs succeeded or failed); see MAX_LEAD. */
  private transient long finished;

  /** Batches planned and forced, not yet marked, by batch time. */
  private transient Map<Long, BatchMarker> unmarked;

  /** The markers' storage, opened at the first batch; used by the driver only. */
  private transient BatchMarkers markers;

  /**
   * @param timeoutMs the idle timeout, or -1 for none
   * @param initialState the initial state, or null
   */
  public StateDriver(
      StateLocation location,
      Partitioner partitioner,
      Function4<Time, K, Option<V>, State<S>, Option<M>> function,
      long timeoutMs,
      JavaPairRDD<K, S> initialState) {
    this.location = location;
    this.partitioner = partitioner;
    this.function = function;
    this.timeoutMs = timeoutMs;
    this.initialState = initialState;
  }

  /** Whether a listener of this instance was made: false in a graph restored from a checkpoint. */
  private transient boolean listening;

  /** The listener that marks batches complete (d4); add it to the StreamingContext. */
  public synchronized StreamingListener listener() {
    listening = true;
    return new StreamingListener() {
      @Override
      public void onBatchCompleted(StreamingListenerBatchCompleted completed) {
        markCompleted(completed);
      }
    };
  }

  @Override
  public JavaRDD<BatchRecord<M>> call(JavaPairRDD<K, V> input, Time time) {
    BatchPlan plan = plan(time);
    // d2: the batch, applied to every partition by one job.
    JavaPairRDD<K, V> data = input.partitionBy(partitioner);
    StateLocation where = location;
    Function4<Time, K, Option<V>, State<S>, Option<M>> fn = function;
    JavaRDD<BatchRecord<M>> records;
    if (plan.version() == 1 && initialState != null) {
      records =
          data.zipPartitions(
              initialState.partitionBy(partitioner),
              (batch, initial) ->
                  Collections.singletonList(run(where, plan, initial, batch, fn)).iterator());
    } else {
      records =
          data.mapPartitions(
              batch ->
                  Collections.singletonList(
                          run(where, plan, Collections.<Tuple2<K, S>>emptyIterator(), batch, fn))
                      .iterator(),
              true);
    }
    String[] pinned;
    synchronized (this) {
      pinned = executors;
    }
    // d5: each partition's task prefers the executor whose cached store holds its base (warm).
    records =
        JavaRDD.fromRDD(
            new PinnedRDD<>(records.rdd(), pinned, records.classTag()), records.classTag());
    records.setName("streamstate mapWithState " + location.name() + " version " + plan.version());
    records.persist(StorageLevel.MEMORY_AND_DISK());
    List<Tuple2<Tuple2<Integer, Long>, String>> commits =
        records
            .map(r -> new Tuple2<>(new Tuple2<>(r.partition(), r.commitId()), r.executor()))
            .collect();
    long[] ids = new long[partitioner.numPartitions()];
    String[] committedBy = new String[ids.length];
    for (Tuple2<Tuple2<Integer, Long>, String> commit : commits) {
      ids[commit._1()._1()] = commit._1()._2();
      committedBy[commit._1()._1()] = commit._2();
    }
    // d3
    synchronized (this) {
      BatchMarker done = new BatchMarker(plan.version(), time.milliseconds(), ids);
      unmarked.put(time.milliseconds(), done);
      base = done;
      fromEmpty = false;
      executors = committedBy;
    }
    return records;
  }

  /** Runs in a task: the batch on this partition's store. */
  private static <K, V, S, M> BatchRecord<M> run(
      StateLocation location,
      BatchPlan plan,
      Iterator<Tuple2<K, S>> initial,
      Iterator<Tuple2<K, V>> batch,
      Function4<Time, K, Option<V>, State<S>, Option<M>> fn) {
    int partition = TaskContext.getPartitionId();
    PartitionStores stores = PartitionStores.of(ProcessResources.shared());
    BatchRecord<M> record =
        stores.withStore(
            location,
            partition,
            store -> PartitionUpdate.apply(store, plan, partition, initial, batch, fn));
    stores.maintainIfDue(location, partition, record.version());
    return record;
  }

  @SuppressWarnings("deprecation") // Spark 4.2 deprecates DStreams; this module is for them
  private synchronized BatchPlan plan(Time time) {
    if (unmarked == null) {
      unmarked = new TreeMap<>();
    }
    if (base == null && !fromEmpty) {
      resume(); // d1
    }
    if (!listening) {
      // A graph Spark restored from its metadata checkpoint (StreamingContext.getOrCreate) holds
      // this driver without the listener mapWithState added: add one to the running context.
      Option<StreamingContext> active = StreamingContext.getActive();
      if (active.isDefined()) {
        active.get().addStreamingListener(listener());
      } else {
        LOG.warn(
            "State {}: no active StreamingContext to mark batches complete in; a restart will"
                + " re-run this run's batches",
            location.describe());
      }
    }
    long version = fromEmpty ? 1 : base.version() + 1;
    awaitLead(version);
    long[] baseIds = fromEmpty ? new long[partitioner.numPartitions()] : base.commitIds();
    return new BatchPlan(location, version, baseIds, time.milliseconds(), timeoutMs);
  }

  /** Waits (holding no lock but this monitor's wait) until {@code version} is within the lead. */
  private void awaitLead(long version) {
    long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MINUTES.toNanos(5);
    while (version - finished > MAX_LEAD) {
      if (System.nanoTime() - deadline >= 0) {
        // A safety valve, not a clock: listener events can be dropped under extreme load.
        LOG.error(
            "State {}: version {} is {} versions ahead of the last finished batch after 5 minutes;"
                + " going on",
            location.describe(),
            version,
            version - finished);
        return;
      }
      try {
        wait(10_000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(
            "State " + location.describe() + ": interrupted while waiting for batches to finish",
            e);
      }
    }
  }

  private void resume() {
    Storage storage = location.openStorage();
    markers = new BatchMarkers(storage, location);
    Optional<BatchMarker> newest = markers.newestDeletingTorn();
    if (newest.isEmpty()) {
      fromEmpty = true;
      finished = 0;
      LOG.info("State {}: no completed batch; starting from the empty state", location.describe());
      return;
    }
    BatchMarker marker = newest.get();
    if (marker.numPartitions() != partitioner.numPartitions()) {
      throw new IllegalStateException(
          "State "
              + location.describe()
              + " has "
              + marker.numPartitions()
              + " partitions (batch version "
              + marker.version()
              + "), but this application's StateSpec asks for "
              + partitioner.numPartitions()
              + ": the partition count of a state cannot change. Set numPartitions("
              + marker.numPartitions()
              + ") or start a state under another name.");
    }
    base = marker;
    finished = marker.version();
    LOG.info(
        "State {}: resuming from completed batch version {} (batch time {} of the run that wrote it)",
        location.describe(),
        marker.version(),
        marker.batchTimeMs());
  }

  private void markCompleted(StreamingListenerBatchCompleted completed) {
    long time = completed.batchInfo().batchTime().milliseconds();
    boolean failed = false;
    for (OutputOperationInfo op :
        CollectionConverters.asJava(completed.batchInfo().outputOperationInfos()).values()) {
      failed |= op.failureReason().isDefined();
    }
    BatchMarker marker;
    BatchMarkers writer;
    synchronized (this) {
      if (unmarked == null) {
        return;
      }
      marker = unmarked.remove(time);
      writer = markers;
      // Batches before this one that never completed are never marked: this marker supersedes them.
      unmarked.keySet().removeIf(t -> t < time);
    }
    if (marker == null) {
      return;
    }
    synchronized (this) {
      finished = Math.max(finished, marker.version());
      notifyAll();
    }
    if (failed) {
      LOG.warn(
          "State {}: batch {} (version {}) had a failed output operation; not marking it complete",
          location.describe(),
          time,
          marker.version());
      return;
    }
    try {
      writer.write(marker);
    } catch (RuntimeException e) {
      // A later batch's marker supersedes this one; until then a restart re-runs from the previous.
      LOG.error(
          "State {}: cannot mark batch version {} complete: {}",
          location.describe(),
          marker.version(),
          e.toString(),
          e);
    }
  }
}
