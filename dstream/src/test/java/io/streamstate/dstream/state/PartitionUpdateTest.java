package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.io.Serializable;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import scala.Function4;
import scala.Option;
import scala.Tuple2;
import scala.runtime.AbstractFunction4;

/**
 * The task side of incremental mapWithState on a real store over local storage, without Spark: a
 * task retry of a batch (the partition function run twice for the same version) gives the same
 * state, not a doubled one, and the next batch builds on the commit the driver recorded.
 */
class PartitionUpdateTest {
  @TempDir Path dir;
  private ProcessResources resources;
  private Storage storage;
  private final List<VersionedStore> stores = new ArrayList<>();
  private final StateLocation location =
      new StateLocation(URI.create("file:///unused"), "counts", Map.of(), null);

  /** Running count per key; a timing-out key maps to "key:timeout". */
  static final class Count
      extends AbstractFunction4<Time, String, Option<Integer>, State<Integer>, Option<String>>
      implements Serializable {
    @Override
    public Option<String> apply(
        Time time, String key, Option<Integer> value, State<Integer> state) {
      if (state.isTimingOut()) {
        return Option.apply(key + ":timeout");
      }
      int count = (state.exists() ? state.get() : 0) + value.get();
      if (count >= 100) {
        state.remove();
      } else {
        state.update(count);
      }
      return Option.apply(key + "=" + count);
    }
  }

  private final Function4<Time, String, Option<Integer>, State<Integer>, Option<String>> count =
      new Count();

  @BeforeEach
  void setUp() {
    resources = new ProcessResources("test-pu");
    storage = new LocalStorage(dir.resolve("durable"));
  }

  @AfterEach
  void tearDown() {
    stores.forEach(VersionedStore::close);
    resources.close();
  }

  private VersionedStore openStore() {
    VersionedStore store =
        VersionedStore.builder("counts/part=0", storage)
            .prefix(location.partitionPrefix(0))
            .localDir(dir.resolve("local-" + stores.size()))
            .resources(resources)
            .memoryBudget(RocksDbMemoryBudget.shared(resources, 64L << 20))
            .open();
    stores.add(store);
    return store;
  }

  private static List<Tuple2<String, Integer>> batch(Object... keysAndCounts) {
    List<Tuple2<String, Integer>> out = new ArrayList<>();
    for (int i = 0; i < keysAndCounts.length; i += 2) {
      out.add(new Tuple2<>((String) keysAndCounts[i], (Integer) keysAndCounts[i + 1]));
    }
    return out;
  }

  private BatchRecord<String> apply(
      VersionedStore store, BatchPlan plan, List<Tuple2<String, Integer>> data) {
    Iterator<Tuple2<String, Integer>> none = Collections.emptyIterator();
    return PartitionUpdate.apply(store, plan, 0, none, data.iterator(), count);
  }

  private static Map<String, Integer> state(VersionedStore store, BatchRecord<?> record) {
    Map<String, Integer> out = new TreeMap<>();
    for (Tuple2<String, Integer> kv :
        PartitionUpdate.<String, Integer>readAll(store, record.version(), record.commitId())) {
      out.put(kv._1(), kv._2());
    }
    return out;
  }

  @Test
  void retriedTaskOfABatchGivesTheSameStateNotADoubledOne() {
    VersionedStore store = openStore();
    BatchPlan first = new BatchPlan(location, 1, new long[] {0}, 1000, -1);
    List<Tuple2<String, Integer>> data = batch("a", 1, "b", 1, "a", 1);

    BatchRecord<String> attempt1 = apply(store, first, data);
    BatchRecord<String> attempt2 = apply(store, first, data); // the task, retried

    assertThat(attempt2.version()).isEqualTo(attempt1.version()).isEqualTo(1);
    assertThat(attempt2.commitId()).isNotEqualTo(attempt1.commitId());
    assertThat(attempt2.mapped()).isEqualTo(attempt1.mapped()).containsExactly("a=1", "b=1", "a=2");
    assertThat(state(store, attempt1)).isEqualTo(Map.of("a", 2, "b", 1));
    assertThat(state(store, attempt2)).isEqualTo(Map.of("a", 2, "b", 1));

    // The driver recorded attempt 1's commit: the next batch builds on it, in this process and in
    // a fresh one (a new executor: no local instance).
    BatchPlan second = new BatchPlan(location, 2, new long[] {attempt1.commitId()}, 2000, -1);
    BatchRecord<String> next = apply(store, second, batch("a", 1));
    assertThat(next.mapped()).containsExactly("a=3");
    BatchRecord<String> nextElsewhere = apply(openStore(), second, batch("a", 1));
    assertThat(nextElsewhere.mapped()).containsExactly("a=3");
    assertThat(state(openStore(), nextElsewhere)).isEqualTo(Map.of("a", 3, "b", 1));
  }

  @Test
  void batchReRunAfterALaterVersionWasCommittedReadsOnlyTheRecordedBase() {
    VersionedStore store = openStore();
    BatchRecord<String> v1 =
        apply(store, new BatchPlan(location, 1, new long[] {0}, 1000, -1), batch("a", 1));
    // A run that died before marking batch 2 complete committed version 2 and 3.
    BatchRecord<String> lost2 =
        apply(
            store, new BatchPlan(location, 2, new long[] {v1.commitId()}, 2000, -1), batch("a", 5));
    apply(
        store, new BatchPlan(location, 3, new long[] {lost2.commitId()}, 3000, -1), batch("a", 5));

    // The next run resumes from the marker of version 1 and applies batch 2 again.
    BatchRecord<String> rerun2 =
        apply(
            openStore(),
            new BatchPlan(location, 2, new long[] {v1.commitId()}, 9000, -1),
            batch("a", 5));
    assertThat(rerun2.mapped()).containsExactly("a=6");
    BatchRecord<String> rerun3 =
        apply(
            store,
            new BatchPlan(location, 3, new long[] {rerun2.commitId()}, 10000, -1),
            batch("a", 1));
    assertThat(rerun3.mapped()).containsExactly("a=7");
  }

  @Test
  void idleKeysTimeOutOnceThenAreGoneAndRemovedStateIsGone() {
    VersionedStore store = openStore();
    long timeout = 2000;
    BatchRecord<String> b1 =
        apply(
            store,
            new BatchPlan(location, 1, new long[] {0}, 1000, timeout),
            batch("idle", 1, "busy", 1, "big", 100));
    assertThat(b1.mapped()).containsExactlyInAnyOrder("idle=1", "busy=1", "big=100");
    BatchRecord<String> b2 =
        apply(
            store,
            new BatchPlan(location, 2, new long[] {b1.commitId()}, 2000, timeout),
            batch("busy", 1));
    assertThat(b2.mapped()).containsExactly("busy=2");
    // At 3500, threshold 1500: "idle" (updated at 1000) times out; "busy" (2000) does not.
    BatchRecord<String> b3 =
        apply(
            store, new BatchPlan(location, 3, new long[] {b2.commitId()}, 3500, timeout), batch());
    assertThat(b3.mapped()).containsExactly("idle:timeout");
    assertThat(state(store, b3)).isEqualTo(Map.of("busy", 2));
    BatchRecord<String> b4 =
        apply(
            store, new BatchPlan(location, 4, new long[] {b3.commitId()}, 5000, timeout), batch());
    assertThat(b4.mapped()).containsExactly("busy:timeout");
    assertThat(state(store, b4)).isEmpty();
  }

  @Test
  void aTimeoutAddedByNewCodeTimesOutKeysNotUpdatedSinceAndDroppingItDropsTheIndex() {
    VersionedStore store = openStore();
    // Runs without a timeout: no index is kept.
    BatchRecord<String> b1 =
        apply(store, new BatchPlan(location, 1, new long[] {0}, 1000, -1), batch("old", 1, "x", 1));
    BatchRecord<String> b2 =
        apply(
            store, new BatchPlan(location, 2, new long[] {b1.commitId()}, 2000, -1), batch("x", 1));
    assertThat(indexEntries(store, b2)).isZero();
    // New code adds a timeout of 1.5 s at batch time 4000: "old" (updated at 1000) and "x" (2000)
    // are idle; "new" is updated now.
    BatchRecord<String> b3 =
        apply(
            store,
            new BatchPlan(location, 3, new long[] {b2.commitId()}, 4000, 1500),
            batch("new", 1));
    assertThat(b3.mapped()).containsExactlyInAnyOrder("new=1", "old:timeout", "x:timeout");
    assertThat(state(store, b3)).isEqualTo(Map.of("new", 1));
    assertThat(indexEntries(store, b3)).isEqualTo(1);
    // And removed again: the index goes with it, the states stay.
    BatchRecord<String> b4 =
        apply(
            openStore(),
            new BatchPlan(location, 4, new long[] {b3.commitId()}, 9000, -1),
            batch("y", 1));
    assertThat(b4.mapped()).containsExactly("y=1");
    assertThat(state(store, b4)).isEqualTo(Map.of("new", 1, "y", 1));
    assertThat(indexEntries(store, b4)).isZero();
  }

  private static int indexEntries(VersionedStore store, BatchRecord<?> record) {
    int n = 0;
    try (io.streamstate.core.engine.StateTransaction tx =
            store.begin(record.version(), java.util.OptionalLong.of(record.commitId()));
        io.streamstate.core.engine.CloseableIterator<io.streamstate.core.engine.KeyValue> it =
            tx.iterator(StateCodec.UPDATE_TIMES)) {
      tx.expectCommit(false);
      while (it.hasNext()) {
        it.next();
        n++;
      }
      tx.abort();
    }
    return n;
  }
}
