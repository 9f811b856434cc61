package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshots asked for at commit ({@link VersionedStore#snapshotInBackground}, Spark's {@code
 * forceSnapshotOnCommit}): the local checkpoint is taken at once and the upload runs in the
 * background, so a stalled snapshot write never holds the caller. Stalls are held by the test until
 * it releases them, so "returned while the write was stalled" is a fact, not a timing.
 */
class ForcedSnapshotTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  @TempDir Path tmp;

  @Test
  void aForcedSnapshotReturnsWhileItsUploadStallsAndLaterRequestsCoalesce() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 11).build();
    Path local = tmp.resolve("a");
    // Maintenance would snapshot at every version: it must still not upload one of its own.
    StoreOptions options = StoreOptions.defaults().withSnapshotInterval(1);
    try (VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(local)
            .options(options)
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      commit(store, 1, 3);
      Stall stall = storage.stall(CallKind.CREATE, n -> n.startsWith("snapshot/"));

      commit(store, 4, 4);
      CompletableFuture<Long> first = returnsInTime(() -> store.snapshotInBackground(4));
      assertThat(stall.awaitBlocked(1, WAIT)).as("the manifest create reached the stall").isTrue();
      assertThat(first).isNotDone();

      // The next batch commits and asks again while the first upload is stalled: both return.
      commit(store, 5, 5);
      CompletableFuture<Long> second = returnsInTime(() -> store.snapshotInBackground(5));
      assertThat(second).isNotDone();
      // Maintenance meanwhile writes no snapshot (it would block on the stall: a second call).
      VersionedStore.MaintenanceResult maintained =
          CompletableFuture.supplyAsync(store::maintain).get(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertThat(maintained.snapshotVersion()).isEqualTo(-1);
      assertThat(stall.blockedCalls()).isEqualTo(1);
      assertThat(snapshotVersions(durable)).isEmpty();

      stall.release();
      assertThat(first.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(4);
      // The coalesced request is served by a snapshot of the newest version once the first ends.
      assertThat(second.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(5);
      assertThat(snapshotVersions(durable)).containsExactly(4L, 5L);
      assertThat(store.lastSnapshotVersion()).isEqualTo(5);
      assertThat(store.metrics().snapshot().snapshotsWritten()).isEqualTo(2);
      assertThat(store.metrics().snapshot().snapshotFailures()).isZero();
      assertThat(checkpointDirs(local)).as("scratch checkpoints deleted").isEmpty();
    }
    // A new process, with no changelog left: each version comes out of its snapshot alone.
    InMemoryStorage snapshotsAlone = withoutChangelogs(durable);
    for (long v = 4; v <= 5; v++) {
      try (VersionedStore fresh =
              VersionedStore.builder("r", snapshotsAlone)
                  .localDir(tmp.resolve("r" + v))
                  .options(StoreOptions.defaults())
                  .memoryBudget(EngineFixture.BUDGET)
                  .open();
          StateTransaction tx = fresh.begin(v)) {
        assertState(tx, v);
        assertThat(fresh.metrics().snapshot().changelogsReplayed()).isZero();
      }
    }
  }

  @Test
  void closingWhileAnUploadStallsPublishesNoSnapshotAndLeavesNoLocalFiles() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 12).build();
    Path local = tmp.resolve("a");
    StoreOptions sharedSsts = StoreOptions.defaults().withInlineSstMaxBytes(0);
    VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(local)
            .options(sharedSsts)
            .memoryBudget(EngineFixture.BUDGET)
            .open();
    commit(store, 1, 3);
    Stall stall = storage.stall(CallKind.CREATE, n -> n.startsWith("sst/"));
    CompletableFuture<Long> running = returnsInTime(() -> store.snapshotInBackground(3));
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
    commit(store, 4, 4);
    CompletableFuture<Long> waiting = returnsInTime(() -> store.snapshotInBackground(4));

    returnsInTime(
        () -> {
          store.close(); // returns while the upload is held by the stall
          return null;
        });

    assertThat(waiting).isCompletedWithValue(-1L);
    assertThat(running).isNotDone();
    // Only the checkpoint the stalled create reads from is left, for that create to finish.
    assertThat(localEntries(local)).singleElement().asString().contains("checkpoint-");

    stall.release();
    assertThat(running.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(-1);
    assertThat(local)
        .as("the last user of the checkpoint deleted the local directory")
        .doesNotExist();
    assertThat(snapshotVersions(durable)).as("no manifest published after close").isEmpty();
    assertThat(store.metrics().snapshot().snapshotFailures()).isZero();
    try (VersionedStore fresh =
            VersionedStore.builder("r", durable)
                .localDir(tmp.resolve("r"))
                .options(sharedSsts)
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(4)) {
      assertState(tx, 4);
    }
  }

  @Test
  void awaitingUploadsBeforeClosePublishesTheRunningSnapshot() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 14).build();
    StoreOptions sharedSsts = StoreOptions.defaults().withInlineSstMaxBytes(0);
    VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(tmp.resolve("a"))
            .options(sharedSsts)
            .memoryBudget(EngineFixture.BUDGET)
            .open();
    commit(store, 1, 3);
    Stall stall = storage.stall(CallKind.CREATE, n -> n.startsWith("sst/"));
    CompletableFuture<Long> running = returnsInTime(() -> store.snapshotInBackground(3));
    assertThat(stall.awaitBlocked(1, WAIT)).isTrue();

    // Held by the stall: the wait runs out and says so.
    assertThat(returnsInTime(() -> store.awaitSnapshotUploads(Duration.ofMillis(200)))).isFalse();
    assertThat(running).isNotDone();

    // Released while a close waits: the snapshot publishes before the store closes.
    CompletableFuture<Boolean> waited =
        CompletableFuture.supplyAsync(() -> store.awaitSnapshotUploads(WAIT));
    stall.release();
    assertThat(waited.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    // The request is answered just after its upload ends (which is what the wait sees).
    assertThat(running.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(3L);
    store.close();
    assertThat(snapshotVersions(durable)).containsExactly(3L);
    try (VersionedStore fresh =
            VersionedStore.builder("r", withoutChangelogs(durable))
                .localDir(tmp.resolve("r"))
                .options(sharedSsts)
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(3)) {
      assertState(tx, 3);
    }
  }

  @Test
  void aFailedBackgroundSnapshotIsCountedAndTheCommittedVersionsStay() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 13).build();
    try (VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(tmp.resolve("a"))
            .options(StoreOptions.defaults())
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      commit(store, 1, 3);
      storage.tearCreate(n -> n.startsWith("snapshot/"));
      CompletableFuture<Long> failed = store.snapshotInBackground(3);
      assertThat(failed).failsWithin(WAIT);
      assertThat(store.metrics().snapshot().snapshotFailures()).isEqualTo(1);
      assertThat(store.lastSnapshotVersion()).isEqualTo(-1);

      // The store goes on; the next forced snapshot is written.
      commit(store, 4, 4);
      assertThat(store.snapshotInBackground(4).get(WAIT.toSeconds(), TimeUnit.SECONDS))
          .isEqualTo(4);
    }
    try (VersionedStore fresh =
            VersionedStore.builder("r", withoutChangelogs(durable))
                .localDir(tmp.resolve("r"))
                .options(StoreOptions.defaults())
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(4)) {
      assertState(tx, 4);
    }
    // The torn manifest of version 3 never verifies: version 3 loads from its changelogs.
    try (VersionedStore fresh =
            VersionedStore.builder("r3", durable)
                .localDir(tmp.resolve("r3"))
                .options(StoreOptions.defaults())
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(3)) {
      assertState(tx, 3);
    }
  }

  /**
   * Runs {@code call} in another thread and returns its result, failing (instead of hanging) if it
   * does not return within {@link #WAIT}: while a stall the test holds is unreleased, a call that
   * waited for the stalled write would never return.
   */
  static <T> T returnsInTime(java.util.concurrent.Callable<T> call) throws Exception {
    java.util.concurrent.FutureTask<T> task = new java.util.concurrent.FutureTask<>(call);
    Thread thread = new Thread(task, "caller");
    thread.setDaemon(true);
    thread.start();
    return task.get(WAIT.toSeconds(), TimeUnit.SECONDS);
  }

  static void commit(VersionedStore store, long from, long to) {
    for (long v = from; v <= to; v++) {
      try (StateTransaction tx = store.begin(v - 1)) {
        writeVersion(tx, v);
        assertThat(tx.commit()).isEqualTo(v);
      }
    }
  }

  static TreeSet<Long> snapshotVersions(InMemoryStorage durable) {
    TreeSet<Long> versions = new TreeSet<>();
    for (String n : durable.names()) {
      StoreLayout.SnapshotName s = StoreLayout.parseSnapshot(n);
      if (s != null) {
        versions.add(s.version());
      }
    }
    return versions;
  }

  /** A copy of the durable files without changelogs: loads must come from snapshots. */
  static InMemoryStorage withoutChangelogs(InMemoryStorage durable) {
    InMemoryStorage copy = new InMemoryStorage();
    for (String n : durable.names()) {
      if (!n.startsWith("changelog/")) {
        copy.create(n, ContentWriter.ofBytes(durable.bytes(n)));
      }
    }
    return copy;
  }

  static List<String> localEntries(Path local) throws IOException {
    if (!Files.isDirectory(local)) {
      return List.of();
    }
    try (Stream<Path> entries = Files.list(local)) {
      return entries.map(p -> p.getFileName().toString()).sorted().toList();
    }
  }

  static List<String> checkpointDirs(Path local) throws IOException {
    return localEntries(local).stream().filter(n -> n.startsWith("checkpoint-")).toList();
  }
}
