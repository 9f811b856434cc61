package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.contents;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code async} durability with a maximum lag of {@value #LAG} versions: commits return before
 * their upload, a commit waits while the lag is at its bound, a clean close uploads everything, and
 * losing the process loses at most the lag, which the next load reports and counts while the state
 * it resumes from is exactly the newest durable version's.
 */
class AsyncDurabilityTest {
  private static final int LAG = 3;
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final StoreOptions ASYNC =
      StoreOptions.defaults().withAsyncMaxLagVersions(LAG).withTornFileGraceMillis(0);

  @TempDir Path tmp;
  private int instances;

  private VersionedStore open(Storage storage) {
    return VersionedStore.builder("op=0/part=0", storage)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(ASYNC)
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  private static void commit(VersionedStore store, long v) {
    try (StateTransaction tx = store.begin(v - 1)) {
      writeVersion(tx, v);
      tx.commit();
    }
  }

  @Test
  void commitsRunAheadOfUploadsByAtMostTheLagAndACleanCloseUploadsAll() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 11).build();
    Stall stall = storage.stall(CallKind.CREATE, n -> true);
    VersionedStore store = open(storage);
    for (long v = 1; v <= LAG; v++) {
      commit(store, v); // returns although no upload can complete
    }
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
    assertThat(store.uploadLag()).isEqualTo(LAG);
    assertThat(durable.names()).isEmpty();
    // The next commit waits: LAG uploads are pending and none can complete while stalled.
    CompletableFuture<Void> fourth = CompletableFuture.runAsync(() -> commit(store, LAG + 1));
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
    assertThat(fourth).isNotDone();
    stall.release();
    fourth.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    store.close(); // a clean close waits for the uploads
    assertThat(store.uploadLag()).isZero();
    try (VersionedStore fresh = open(durable);
        StateTransaction tx = fresh.begin(LAG + 1)) {
      assertState(tx, LAG + 1);
      assertThat(fresh.metrics().snapshot().versionsLost()).isZero();
    }
  }

  @Test
  void losingTheProcessLosesAtMostTheLagAndTheLossIsReported() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 12).build();
    VersionedStore store = open(storage);
    commit(store, 1);
    commit(store, 2);
    waitUntilUploaded(store);
    // Uploads of versions 3 and 4 stall (a slow store), then the process dies.
    Stall stall =
        storage.stall(
            CallKind.CREATE,
            n -> n.contains("/00000000000000000003-") || n.contains("/00000000000000000004-"));
    commit(store, 3);
    commit(store, 4);
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
    storage.crash();
    stall.release();
    store.close();
    storage.recover();

    // Spark asks for version 4 (its batches 3 and 4 ran); durable storage has up to 2.
    try (VersionedStore resumed = open(durable)) {
      try (StateTransaction tx = resumed.begin(4)) {
        assertState(tx, 2);
        assertThat(resumed.metrics().snapshot().versionsLost()).isEqualTo(2);
        writeVersion(tx, 5);
        assertThat(tx.commit()).isEqualTo(5);
      }
      resumed.close(); // uploads version 5
    }
    TreeMap<String, String> expected = EngineFixture.reference(2);
    try (VersionedStore scratch = open(new InMemoryStorage());
        StateTransaction tx = scratch.begin(0)) {
      // The changes of version 5 alone, applied by the model on top of version 2.
      writeVersion(tx, 5);
      TreeMap<String, String> v5 = contents(tx);
      expected.putAll(v5);
      expected.remove("k" + (5 * 13) % 300);
    }
    try (VersionedStore fresh = open(durable);
        StateTransaction tx = fresh.begin(5)) {
      assertThat(contents(tx)).isEqualTo(expected);
      assertThat(fresh.metrics().snapshot().versionsLost()).isZero();
    }
  }

  @Test
  void aLostVersionNamedByCommitIdResumesUnderThatIdSoTheNamedLineageStaysLoadable()
      throws Exception {
    // Checkpoint format v2: Spark's commit log names version 4 by the id its commit returned,
    // although that commit never became durable.
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 13).build();
    VersionedStore store = open(storage);
    commit(store, 1);
    commit(store, 2);
    waitUntilUploaded(store);
    Stall stall =
        storage.stall(
            CallKind.CREATE,
            n -> n.contains("/00000000000000000003-") || n.contains("/00000000000000000004-"));
    commit(store, 3);
    long id4;
    try (StateTransaction tx = store.begin(3)) {
      writeVersion(tx, 4);
      tx.commit();
      id4 = tx.committedId();
    }
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
    storage.crash();
    stall.release();
    store.close();
    storage.recover();

    long id5;
    try (VersionedStore resumed = open(durable)) {
      try (StateTransaction tx = resumed.begin(4, OptionalLong.of(id4))) {
        assertState(tx, 2);
        assertThat(tx.baseCommitId()).isEqualTo(id4);
        assertThat(resumed.metrics().snapshot().versionsLost()).isEqualTo(2);
        writeVersion(tx, 5);
        tx.commit();
        id5 = tx.committedId();
      }
      resumed.close();
    }
    try (VersionedStore fresh = open(durable)) {
      try (StateTransaction tx = fresh.begin(4, OptionalLong.of(id4))) {
        assertState(tx, 2); // the bridge named id4 holds no changes
      }
      try (StateTransaction tx = fresh.begin(5, OptionalLong.of(id5))) {
        assertThat(tx.baseCommitId()).isEqualTo(id5);
      }
      assertThat(fresh.metrics().snapshot().versionsLost()).isZero();
    }
  }

  private static void waitUntilUploaded(VersionedStore store) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (store.uploadLag() > 0 && System.nanoTime() < deadline) {
      Thread.sleep(5);
    }
    assertThat(store.uploadLag()).isZero();
  }
}
