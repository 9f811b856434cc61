package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;

/**
 * Store partitions of one operator that commit each version together, one thread each, as the tasks
 * of one executor do: the shared helpers of the group commit and segment journal tests.
 */
final class StoreGroup {
  private final Path tmp;
  private final ExecutorService pool;
  private final int size;
  private int instances;

  /**
   * @param tmp where local RocksDB directories go
   * @param pool runs the stores' commits, at least {@code size} at once
   * @param size stores per group
   */
  StoreGroup(Path tmp, ExecutorService pool, int size) {
    this.tmp = tmp;
    this.pool = pool;
    this.size = size;
  }

  static String prefix(int store) {
    return "0/" + store + "/";
  }

  VersionedStore open(Storage storage, int store, StoreOptions options, GroupCommitter committer) {
    return VersionedStore.builder("op=0/part=" + store, storage)
        .prefix(prefix(store))
        .localDir(tmp.resolve("l" + (++instances)))
        .options(options)
        .memoryBudget(EngineFixture.BUDGET)
        .groupCommitter(committer)
        .open();
  }

  /** Every store of the group, sharing {@code committer}. */
  List<VersionedStore> openAll(Storage storage, StoreOptions options, GroupCommitter committer) {
    List<VersionedStore> stores = new ArrayList<>();
    for (int i = 0; i < size; i++) {
      stores.add(open(storage, i, options, committer));
    }
    return stores;
  }

  /** Commits version {@code v} of every store, one thread each, all begun before any commits. */
  void commitTogether(List<VersionedStore> stores, long v) throws Exception {
    for (Future<Long> f : startTogether(stores, v)) {
      assertThat(f.get()).isEqualTo(v);
    }
  }

  /** As {@link #commitTogether}, returning each store's outcome. */
  List<Future<Long>> startTogether(List<VersionedStore> stores, long v) {
    CyclicBarrier begun = new CyclicBarrier(stores.size());
    List<Future<Long>> commits = new ArrayList<>();
    for (VersionedStore store : stores) {
      commits.add(
          pool.submit(
              () -> {
                try (StateTransaction tx = store.begin(v - 1)) {
                  writeVersion(tx, v);
                  begun.await();
                  return tx.commit();
                }
              }));
    }
    return commits;
  }

  /** Every outcome failed with {@code type} (wrapped in the member's own exception of it). */
  static void assertEveryMemberFailed(
      List<Future<Long>> outcomes, Class<? extends Throwable> type) {
    for (Future<Long> f : outcomes) {
      assertThatThrownBy(f::get).isInstanceOf(ExecutionException.class).hasCauseInstanceOf(type);
    }
  }

  /** Every store loads {@code v} in a new process (a new storage instance, so nothing cached). */
  void assertEveryStoreLoads(Storage durable, long v) {
    Storage fresh = FaultInjectingStorage.builder(durable, 99).build();
    for (int i = 0; i < size; i++) {
      try (VersionedStore store = open(fresh, i, StoreOptions.defaults(), null);
          StateTransaction tx = store.begin(v)) {
        assertState(tx, v);
      }
    }
  }
}
