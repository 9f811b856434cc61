package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Group commit: concurrent commits of one version by stores of one storage root become one segment;
 * each member commit is durable when it returns, reads back exactly as a changelog would, fails as
 * a changelog would, and segments are swept only once no store needs them. The waits here are
 * effectively unbounded ({@link #FOREVER}): a segment that waits for a transaction it must not wait
 * for shows up as a test timeout, never as a slow pass.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class GroupCommitTest {
  private static final long FOREVER = TimeUnit.HOURS.toMillis(1);
  private static final int STORES = 4;

  @TempDir Path tmp;
  private final ExecutorService pool = Executors.newFixedThreadPool(STORES);
  private StoreGroup group;

  @org.junit.jupiter.api.BeforeEach
  void makeGroup() {
    group = new StoreGroup(tmp, pool, STORES);
  }

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  private VersionedStore open(
      Storage storage, int store, StoreOptions options, GroupCommitter committer) {
    return group.open(storage, store, options, committer);
  }

  private List<VersionedStore> openAll(Storage storage, StoreOptions options, long maxWaitMillis) {
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(), storage, null, maxWaitMillis, maxWaitMillis, null);
    List<VersionedStore> stores = new ArrayList<>();
    for (int i = 0; i < STORES; i++) {
      stores.add(open(storage, i, options, committer));
    }
    return stores;
  }

  /** Commits version {@code v} of every store, one thread each, all begun before any commits. */
  private void commitTogether(List<VersionedStore> stores, long v) throws Exception {
    group.commitTogether(stores, v);
  }

  /** As {@link #commitTogether}, returning each store's outcome. */
  private List<Future<Long>> startTogether(List<VersionedStore> stores, long v) {
    return group.startTogether(stores, v);
  }

  /** Every outcome failed with {@code type} (wrapped in the member's own exception of it). */
  private static void assertEveryMemberFailed(
      List<Future<Long>> outcomes, Class<? extends Throwable> type) {
    StoreGroup.assertEveryMemberFailed(outcomes, type);
  }

  private static List<String> segments(InMemoryStorage durable) {
    return durable.names().stream().filter(n -> n.startsWith(SegmentCatalog.SEGMENT_DIR)).toList();
  }

  private static List<String> changelogs(InMemoryStorage durable) {
    return durable.names().stream().filter(n -> n.contains("/changelog/")).toList();
  }

  /** Every store loads {@code v} in a new process (a new storage instance, so nothing cached). */
  private void assertEveryStoreLoads(InMemoryStorage durable, long v) {
    group.assertEveryStoreLoads(durable, v);
  }

  @Test
  void concurrentCommitsOfAVersionShareOneSegmentAndLoadBackExactly() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      for (long v = 1; v <= 3; v++) {
        commitTogether(stores, v);
      }
      assertThat(segments(durable)).hasSize(3);
      assertThat(changelogs(durable)).isEmpty();
      long members = 0;
      long written = 0;
      for (VersionedStore s : stores) {
        members += s.metrics().snapshot().segmentCommits();
        written += s.metrics().snapshot().segmentsWritten();
      }
      assertThat(members).isEqualTo(3L * STORES);
      assertThat(written).isEqualTo(3);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    for (long v = 1; v <= 3; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }

  /**
   * One task's two stores on this thread: both begin version 0 and write version 1, the first
   * commits (deferred: the thread still holds the second); returns the second, open.
   */
  private static StateTransaction commitFirstOfTwo(List<VersionedStore> stores) {
    StateTransaction a = stores.get(0).begin(0);
    StateTransaction b = stores.get(1).begin(0);
    writeVersion(a, 1);
    writeVersion(b, 1);
    assertThat(a.commit()).isEqualTo(1);
    return b;
  }

  /** The first {@code count} stores load {@code v} from {@code durable} in a new process. */
  private void assertFirstStoresLoad(InMemoryStorage durable, int count, long v) {
    Storage fresh = FaultInjectingStorage.builder(durable, 90 + count).build();
    for (int i = 0; i < count; i++) {
      try (VersionedStore store = open(fresh, i, StoreOptions.defaults(), null);
          StateTransaction tx = store.begin(v)) {
        assertState(tx, v);
      }
    }
  }

  @Test
  void aThreadCommittingTwoStoresInTurnWritesOneSegmentWhenItsLastCommitReturns() {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      // One task with two stateful operators (or a join's stores): both open on one thread.
      StateTransaction b = commitFirstOfTwo(stores);
      // The thread commits b next: a's commit returned without waiting for a write of its own.
      assertThat(segments(durable)).isEmpty();
      assertThat(b.commit()).isEqualTo(1);
      // b's commit returned once both were durable, in one segment.
      assertThat(segments(durable)).hasSize(1);
      assertThat(stores.get(0).metrics().snapshot().segmentCommits()).isEqualTo(1);
      assertThat(stores.get(1).metrics().snapshot().segmentsWritten()).isEqualTo(1);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertFirstStoresLoad(durable, 2, 1);
  }

  @Test
  void aCommitDeferredToTheThreadsNextIsWrittenWhenThatTransactionAborts() {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      StateTransaction b = commitFirstOfTwo(stores);
      assertThat(segments(durable)).isEmpty();
      b.abort(); // the thread's last transaction of the version: a's segment is written now
      assertThat(segments(durable)).hasSize(1);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertFirstStoresLoad(durable, 1, 1);
  }

  @Test
  void aDeferredCommitWhoseSegmentFailsFailsTheThreadsLastCommitAndIsNeverLoadedWarm() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 8).build();
    List<VersionedStore> stores = openAll(storage, StoreOptions.defaults(), FOREVER);
    try {
      StateTransaction b = commitFirstOfTwo(stores);
      storage.failBefore(storage.callCount()); // the next call creates the segment of a and b
      assertThatThrownBy(b::commit).isInstanceOf(RetryableException.class);
      assertThat(segments(durable)).isEmpty();
      // a's version 1 is in its local instance, but not durable: its store must not serve it.
      assertThatThrownBy(() -> stores.get(0).begin(1))
          .isInstanceOf(io.streamstate.core.error.MissingFileException.class);
      // The task's retry commits both from version 0.
      commitFirstOfTwo(stores).commit();
      assertThat(segments(durable)).hasSize(1);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertFirstStoresLoad(durable, 2, 1);
  }

  @Test
  void aDeferredCommitThatFailsWhenASnapshotWritesItFailsTheThreadsLastCommit() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 9).build();
    List<VersionedStore> stores = openAll(storage, StoreOptions.defaults(), FOREVER);
    try {
      StateTransaction b = commitFirstOfTwo(stores);
      storage.failBefore(storage.callCount()); // the snapshot's write of a's segment
      CompletableFuture<Long> snapshot =
          CompletableFuture.supplyAsync(() -> stores.get(0).snapshotNow(), pool);
      assertThat(snapshot.join()).isEqualTo(-1); // a's version 1 is not durable: no snapshot
      // b's own segment lands, but a's commit, which returned on the promise of b's, did not:
      // the task must fail, not succeed without a.
      assertThatThrownBy(b::commit).isInstanceOf(OutcomeUnknownException.class);
      assertThatThrownBy(() -> stores.get(0).begin(1))
          .isInstanceOf(io.streamstate.core.error.MissingFileException.class);
    } finally {
      stores.forEach(VersionedStore::close);
    }
  }

  @Test
  void aSnapshotOfADeferredCommitWritesItsSegmentFirst() {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      StateTransaction b = commitFirstOfTwo(stores);
      assertThat(segments(durable)).isEmpty();
      // Maintenance snapshots a meanwhile: a snapshot of version 1 may be published only once
      // version 1's commit is durable.
      CompletableFuture<Long> snapshot =
          CompletableFuture.supplyAsync(() -> stores.get(0).snapshotNow(), pool);
      assertThat(snapshot.join()).isEqualTo(1);
      assertThat(segments(durable)).hasSize(1);
      b.commit(); // a's segment is written already: b's goes alone
      assertThat(segments(durable)).hasSize(2);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertFirstStoresLoad(durable, 2, 1);
  }

  @Test
  void aCommitWaitsForAnotherThreadsOpenTransactionUntilItCommitsOrWithdraws() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      StateTransaction other = pool.submit(() -> stores.get(1).begin(0)).get();
      StateTransaction readOnly = pool.submit(() -> stores.get(2).begin(0)).get();
      readOnly.expectCommit(false); // a read-only use: nobody waits for it
      CompletableFuture<Long> first =
          CompletableFuture.supplyAsync(
              () -> {
                try (StateTransaction tx = stores.get(0).begin(0)) {
                  writeVersion(tx, 1);
                  return tx.commit();
                }
              },
              pool);
      // The other thread's transaction may still commit: the segment waits for it.
      Thread.sleep(200);
      assertThat(first).isNotDone();
      assertThat(segments(durable)).isEmpty();
      other.abort();
      assertThat(first.get(60, TimeUnit.SECONDS)).isEqualTo(1);
      assertThat(segments(durable)).hasSize(1);
      readOnly.abort();
    } finally {
      stores.forEach(VersionedStore::close);
    }
  }

  @Test
  void aTransactionBegunWellAfterTheSegmentsMembersIsNotWaitedFor() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    GroupCommitter committer =
        new GroupCommitter(ProcessResources.shared(), durable, null, FOREVER, 50, null);
    List<VersionedStore> stores = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      stores.add(open(durable, i, StoreOptions.defaults(), committer));
    }
    try {
      StateTransaction early = stores.get(0).begin(0);
      Thread.sleep(300); // the next task starts well after this one (more partitions than slots)
      StateTransaction late = pool.submit(() -> stores.get(1).begin(0)).get();
      writeVersion(early, 1);
      assertThat(early.commit()).isEqualTo(1); // a wait for the late one would never end
      assertThat(segments(durable)).hasSize(1);
      late.abort();
    } finally {
      stores.forEach(VersionedStore::close);
    }
  }

  @Test
  void theWaitIsBoundedByMaxWait() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), 50);
    try {
      StateTransaction slow = pool.submit(() -> stores.get(1).begin(0)).get();
      try (StateTransaction tx = stores.get(0).begin(0)) {
        writeVersion(tx, 1);
        assertThat(tx.commit()).isEqualTo(1); // returns although the other never arrives
      }
      slow.abort();
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertThat(segments(durable)).hasSize(1);
  }

  @Test
  void aFailedSegmentFailsEveryMemberAndLeavesNothingSoTheRetryCommits() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 5).build();
    List<VersionedStore> stores = openAll(storage, StoreOptions.defaults(), FOREVER);
    try {
      commitTogether(stores, 1);
      storage.failBefore(storage.callCount()); // the next call is version 2's segment create
      assertEveryMemberFailed(startTogether(stores, 2), RetryableException.class);
      assertThat(segments(durable)).hasSize(1);
      // Every member failed as its own commit would have: the task retries, and commits.
      commitTogether(stores, 2);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertEveryStoreLoads(durable, 2);
  }

  @Test
  void aLostReplyIsAnUnknownOutcomeForEveryMemberAndALoadFindsTheCommit() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 6).build();
    List<VersionedStore> stores = openAll(storage, StoreOptions.defaults(), FOREVER);
    try {
      commitTogether(stores, 1);
      storage.failAfter(storage.callCount()); // version 2's segment lands, its reply is lost
      assertEveryMemberFailed(startTogether(stores, 2), OutcomeUnknownException.class);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    // The segment did land: every store loads version 2 from it.
    assertThat(segments(durable)).hasSize(2);
    assertEveryStoreLoads(durable, 2);
  }

  @Test
  void aTornSegmentIsSkippedAndItsVersionIsReportedMissingNotLoadedHalfway() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 7).build();
    GroupCommitter committer =
        new GroupCommitter(ProcessResources.shared(), storage, null, FOREVER, FOREVER, null);
    try (VersionedStore store = open(storage, 0, StoreOptions.defaults(), committer)) {
      try (StateTransaction tx = store.begin(0)) {
        writeVersion(tx, 1);
        tx.commit();
      }
      // The writer dies half way through version 2's segment.
      storage.tearCreate(n -> n.startsWith(SegmentCatalog.SEGMENT_DIR));
      try (StateTransaction tx = store.begin(1)) {
        writeVersion(tx, 2);
        assertThatThrownBy(tx::commit).isInstanceOf(OutcomeUnknownException.class);
      }
    }
    assertThat(segments(durable)).hasSize(2);
    Storage fresh = FaultInjectingStorage.builder(durable, 98).build();
    try (VersionedStore store = open(fresh, 0, StoreOptions.defaults(), null)) {
      assertThatThrownBy(() -> store.begin(2))
          .isInstanceOf(StreamStateException.class)
          .hasMessageContaining("version 2")
          .hasMessageContaining(SegmentCatalog.SEGMENT_DIR);
      try (StateTransaction tx = store.begin(1)) {
        assertState(tx, 1);
      }
    }
  }

  @Test
  void aRerunOfAVersionInAnotherSegmentWinsAndLaterVersionsFollowIt() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), FOREVER);
    try {
      commitTogether(stores, 1);
      commitTogether(stores, 2);
      // Spark re-runs batch 2 (its commit log entry was never written): a second segment of 2.
      List<VersionedStore> rerun = openAll(durable, StoreOptions.defaults(), FOREVER);
      try {
        commitTogether(rerun, 2);
        commitTogether(rerun, 3);
      } finally {
        rerun.forEach(VersionedStore::close);
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertThat(segments(durable)).hasSize(4);
    assertEveryStoreLoads(durable, 3);
  }

  @Test
  void theSweepDeletesSegmentsOnlyOnceEveryMemberStoreHasABaseAboveThem() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    StoreOptions options =
        StoreOptions.defaults().withMinVersionsToRetain(3).withSnapshotInterval(2);
    List<VersionedStore> stores = openAll(durable, options, FOREVER);
    int versions = 12;
    try {
      SegmentSweep sweep = SegmentSweep.of(ProcessResources.shared(), durable);
      for (long v = 1; v <= versions; v++) {
        commitTogether(stores, v);
        // Maintenance (snapshots every 2 versions, retention) of all but the last store.
        for (int i = 0; i < STORES - 1; i++) {
          stores.get(i).maintain();
        }
        if (v == 4) {
          // The last store has no snapshot yet: no segment may go, whatever the others' bases.
          assertThat(sweep.sweep(options)).isZero();
          stores.get(STORES - 1).maintain(); // its one snapshot before the end: version 4
        }
      }
      stores.get(STORES - 1).maintain();
      // Bases: 10 for the stores maintained every version, 4 for the last one. Every segment
      // holds all four stores, so exactly the segments of versions 1 to 4 are no longer needed.
      assertThat(sweep.sweep(options)).isEqualTo(4);
      assertThat(segments(durable)).hasSize(versions - 4);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    // Every version retention promises still loads, in a new process.
    for (long v = versions - options.minVersionsToRetain() + 1; v <= versions; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }
}
