package io.streamstate.dstream.state;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.VersionedStore;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.OptionalLong;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StateImpl;
import org.apache.spark.streaming.Time;
import scala.Function4;
import scala.Option;
import scala.Tuple2;

/**
 * Applies one batch to one partition's store: Spark's {@code MapWithStateRDDRecord
 * .updateRecordWithData} on a {@link VersionedStore} instead of an in-memory map.
 *
 * <ol>
 *   <li>Load {@code plan.version() - 1}, exactly the commit the driver recorded for it ({@link
 *       BatchPlan#baseCommitIds()}). Any other commit of that version, or any commit of a later
 *       version (an earlier attempt of this task, a run that died before it marked its batch
 *       complete), is never read, so applying a batch again gives the same state, never a doubled
 *       one.
 *   <li>First batch only ({@code version 1}): put the initial state, updated at the batch's time.
 *   <li>Per record, in order: call the function with the key's state; remove, or put with the
 *       batch's time as update time when the state was updated (or merely exists and timeouts are
 *       on, as Spark does).
 *   <li>With a timeout: every key last updated before {@code batch time - timeout} (a range scan of
 *       {@value StateCodec#UPDATE_TIMES}) is given to the function once, timing out, then removed.
 *   <li>Commit {@code plan.version()} as one changelog, and report the commit's id.
 * </ol>
 */
public final class PartitionUpdate {
  private PartitionUpdate() {}

  /**
   * Applies the batch; returns the commit and the mapped records.
   *
   * @param initial the initial state of this partition (read only at version 1)
   */
  public static <K, V, S, M> BatchRecord<M> apply(
      VersionedStore store,
      BatchPlan plan,
      int partition,
      Iterator<Tuple2<K, S>> initial,
      Iterator<Tuple2<K, V>> data,
      Function4<Time, K, Option<V>, State<S>, Option<M>> function) {
    StateCodec codec = StateCodec.create();
    long base = plan.version() - 1;
    long baseCommit = plan.baseCommitIds()[partition];
    Time batchTime = new Time(plan.batchTimeMs());
    long now = plan.batchTimeMs();
    List<M> mapped = new ArrayList<>();
    try (StateTransaction tx = store.begin(base, OptionalLong.of(base == 0 ? 0 : baseCommit))) {
      if (!tx.columnFamilies().contains(StateCodec.STATE)) {
        tx.createColumnFamily(StateCodec.STATE);
        tx.createColumnFamily(StateCodec.UPDATE_TIMES);
      }
      if (!tx.columnFamilies().contains(StateCodec.META)) {
        tx.createColumnFamily(StateCodec.META);
      }
      boolean indexed = keepTimeIndex(tx, plan.timesOut());
      if (base == 0) {
        while (initial.hasNext()) {
          Tuple2<K, S> entry = initial.next();
          put(tx, codec.encode(entry._1()), codec.encode(entry._2()), now, indexed);
        }
      }
      StateImpl<S> state = new StateImpl<>();
      while (data.hasNext()) {
        Tuple2<K, V> record = data.next();
        byte[] key = codec.encode(record._1());
        byte[] current = tx.get(StateCodec.STATE, key);
        state.wrap(
            current == null
                ? Option.<S>empty()
                : Option.apply(codec.<S>decode(current, StateCodec.STATE_OFFSET)));
        Option<M> out = function.apply(batchTime, record._1(), Option.apply(record._2()), state);
        if (state.isRemoved()) {
          remove(tx, key, current, indexed);
        } else if (state.isUpdated() || (state.exists() && plan.timesOut())) {
          if (current != null && indexed) {
            tx.delete(
                StateCodec.UPDATE_TIMES, StateCodec.timeKey(StateCodec.updateTime(current), key));
          }
          put(tx, key, codec.encode(state.get()), now, indexed);
        }
        if (out.isDefined()) {
          mapped.add(out.get());
        }
      }
      if (plan.timesOut()) {
        timeOut(tx, codec, plan, batchTime, function, state, mapped);
      }
      tx.commit();
      return new BatchRecord<>(
          partition, tx.committedVersion(), tx.committedId(), mapped, PinnedRDD.currentExecutor());
    }
  }

  private static <K, V, S, M> void timeOut(
      StateTransaction tx,
      StateCodec codec,
      BatchPlan plan,
      Time batchTime,
      Function4<Time, K, Option<V>, State<S>, Option<M>> function,
      StateImpl<S> state,
      List<M> mapped) {
    // Collected first: the function's calls change the family being scanned.
    List<byte[]> idle = new ArrayList<>();
    try (CloseableIterator<KeyValue> it =
        tx.rangeIterator(
            StateCodec.UPDATE_TIMES, null, StateCodec.timeBound(plan.timeoutThresholdMs()))) {
      while (it.hasNext()) {
        idle.add(StateCodec.keyOfTimeKey(it.next().key()));
      }
    }
    for (byte[] key : idle) {
      byte[] current = tx.get(StateCodec.STATE, key);
      if (current == null) {
        continue;
      }
      state.wrapTimingOutState(codec.<S>decode(current, StateCodec.STATE_OFFSET));
      Option<M> out = function.apply(batchTime, codec.<K>decode(key, 0), Option.<V>empty(), state);
      if (out.isDefined()) {
        mapped.add(out.get());
      }
      remove(tx, key, current, true);
    }
  }

  /**
   * Keeps the update-time index only while the spec has a timeout: without one it is dropped (its
   * entries deleted, marked incomplete); with one, an incomplete index (a first batch, or a run
   * whose new code added the timeout) is rebuilt from the states' update times first, so that every
   * key can time out, not only those updated since.
   *
   * @return whether this batch maintains the index
   */
  private static boolean keepTimeIndex(StateTransaction tx, boolean timesOut) {
    byte[] flag = StateCodec.timeIndexComplete();
    boolean complete = tx.exists(StateCodec.META, flag);
    if (timesOut == complete) {
      return timesOut;
    }
    List<byte[]> stale = new ArrayList<>();
    try (CloseableIterator<KeyValue> it = tx.iterator(StateCodec.UPDATE_TIMES)) {
      while (it.hasNext()) {
        stale.add(it.next().key());
      }
    }
    stale.forEach(k -> tx.delete(StateCodec.UPDATE_TIMES, k));
    if (!timesOut) {
      tx.delete(StateCodec.META, flag);
      return false;
    }
    List<byte[]> entries = new ArrayList<>();
    try (CloseableIterator<KeyValue> it = tx.iterator(StateCodec.STATE)) {
      while (it.hasNext()) {
        KeyValue kv = it.next();
        entries.add(StateCodec.timeKey(StateCodec.updateTime(kv.value()), kv.key()));
      }
    }
    entries.forEach(k -> tx.put(StateCodec.UPDATE_TIMES, k, StateCodec.present()));
    tx.put(StateCodec.META, flag, StateCodec.present());
    return true;
  }

  private static void put(
      StateTransaction tx, byte[] key, byte[] state, long now, boolean indexed) {
    tx.put(StateCodec.STATE, key, StateCodec.stateValue(now, state));
    if (indexed) {
      tx.put(StateCodec.UPDATE_TIMES, StateCodec.timeKey(now, key), StateCodec.present());
    }
  }

  private static void remove(StateTransaction tx, byte[] key, byte[] current, boolean indexed) {
    if (current != null) {
      tx.delete(StateCodec.STATE, key);
      if (indexed) {
        tx.delete(StateCodec.UPDATE_TIMES, StateCodec.timeKey(StateCodec.updateTime(current), key));
      }
    }
  }

  /**
   * The whole state of a partition at a commit: what {@code stateSnapshots()} returns. Loads the
   * commit (warm right after the batch that made it) and reads without committing.
   */
  public static <K, S> List<Tuple2<K, S>> readAll(
      VersionedStore store, long version, long commitId) {
    StateCodec codec = StateCodec.create();
    List<Tuple2<K, S>> all = new ArrayList<>();
    try (StateTransaction tx = store.begin(version, OptionalLong.of(commitId))) {
      tx.expectCommit(false);
      if (!tx.columnFamilies().contains(StateCodec.STATE)) {
        return all;
      }
      try (CloseableIterator<KeyValue> it = tx.iterator(StateCodec.STATE)) {
        while (it.hasNext()) {
          KeyValue kv = it.next();
          all.add(
              new Tuple2<>(
                  codec.<K>decode(kv.key(), 0),
                  codec.<S>decode(kv.value(), StateCodec.STATE_OFFSET)));
        }
      }
    }
    return all;
  }
}
