package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static io.streamstate.testkit.engine.ForcedSnapshotTest.snapshotVersions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replay-debt snapshots ({@code StoreOptions.replayDebtPercent}, {@code replayDebtMinChanges}): a
 * commit after which a load would replay more changes than a share of the store's keys, and more
 * than the floor, queues a snapshot in the background; the snapshot interval alone would wait
 * longer (here 1,000 versions, so maintenance never snapshots). Whether a commit queued one is
 * decided in the commit ({@code replayDebtSnapshots} counts it at once), so the test can say which
 * commits did not; which version the snapshot holds is then read back from durable storage.
 */
class ReplayDebtSnapshotTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int KEYS = 1_000;

  @TempDir Path tmp;

  /** Floor 100 changes, 1 % of the keys: the floor decides below it, the share above. */
  private static final StoreOptions FLOOR_DECIDES =
      StoreOptions.defaults().withSnapshotInterval(1_000).withReplayDebt(1, 100);

  @Test
  void changesAboveTheFloorSinceTheLastSnapshotQueueOneAndALoadReplaysOnlyWhatFollowsIt()
      throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    TreeMap<String, String> model = new TreeMap<>();
    try (VersionedStore store = open(durable, "a", FLOOR_DECIDES)) {
      // Version 1 writes 1,000 keys: 1,000 changes to replay from the empty state, over the floor.
      commit(store, 1, 0, KEYS, model);
      awaitSnapshot(durable, 1);
      assertThat(queued(store)).isEqualTo(1);

      // Versions 2-9 change 10 keys each: at most 80 changes since snapshot 1, under the floor.
      for (long v = 2; v <= 9; v++) {
        commit(store, v, (int) (v * 10), 10, model);
      }
      assertThat(queued(store)).as("no snapshot queued under the floor").isEqualTo(1);
      assertThat(store.metrics().snapshot().snapshotsWritten()).isEqualTo(1);

      // Version 10 changes 30 more: 110 changes since snapshot 1, over the floor and over 1 %.
      commit(store, 10, 500, 30, model);
      assertThat(queued(store)).isEqualTo(2);
      awaitSnapshot(durable, 10);
      assertThat(snapshotVersions(durable)).containsExactly(1L, 10L);
      assertThat(store.metrics().snapshot().snapshotFailures()).isZero();
    }

    // A new instance loads version 10 from its snapshot alone, then commits 11-13 (60 changes).
    try (VersionedStore store = open(durable, "b", FLOOR_DECIDES)) {
      for (long v = 11; v <= 13; v++) {
        commit(store, v, (int) (v * 7), 20, model);
      }
      assertThat(store.metrics().snapshot().changelogsReplayed()).isZero();
      assertThat(queued(store)).isZero();
    }

    // Another loads 13 by replaying 11-13 (60 changes it counts as its own), then commits 14 with
    // 50: 110 since snapshot 10, so 14 is snapshotted although this instance wrote only 50.
    try (VersionedStore store = open(durable, "c", FLOOR_DECIDES)) {
      commit(store, 14, 900, 50, model);
      assertThat(store.metrics().snapshot().changelogsReplayed()).isEqualTo(3);
      assertThat(queued(store)).isEqualTo(1);
      awaitSnapshot(durable, 14);
    }

    // The snapshot holds the model's state: a load from it alone gives every key.
    try (VersionedStore store =
            open(ForcedSnapshotTest.withoutChangelogs(durable), "d", FLOOR_DECIDES);
        StateTransaction tx = store.begin(14)) {
      assertThat(EngineFixture.contents(tx)).isEqualTo(model);
      assertThat(store.metrics().snapshot().changelogsReplayed()).isZero();
    }
  }

  @Test
  void theShareOfTheKeysDecidesAboveTheFloorAndZeroTurnsItOff() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    TreeMap<String, String> model = new TreeMap<>();
    // Floor 0, half the keys: after version 1's 1,000 keys, 100 changes a version stay under 50 %
    // for at least four versions (400 < 500 of 1,000 keys), and pass it by version 11 even if
    // RocksDB's estimate counted every overwrite as a key (1,000 >= 50 % of 2,000).
    StoreOptions half = StoreOptions.defaults().withSnapshotInterval(1_000).withReplayDebt(50, 0);
    try (VersionedStore store = open(durable, "a", half)) {
      commit(store, 1, 0, KEYS, model);
      awaitSnapshot(durable, 1);
      for (long v = 2; v <= 5; v++) {
        commit(store, v, (int) (v * 100), 100, model);
      }
      assertThat(queued(store)).as("under half the keys since snapshot 1").isEqualTo(1);
      long v = 5;
      while (queued(store) == 1 && v < 11) {
        v++;
        commit(store, v, (int) (v * 100 % KEYS), 100, model);
      }
      assertThat(queued(store)).as("queued by version %d", v).isEqualTo(2);
      awaitSnapshot(durable, v);
    }

    StoreOptions off = StoreOptions.defaults().withSnapshotInterval(1_000).withReplayDebt(0, 0);
    InMemoryStorage other = new InMemoryStorage();
    try (VersionedStore store = open(other, "b", off)) {
      for (long v = 1; v <= 5; v++) {
        commit(store, v, 0, KEYS, new TreeMap<>());
      }
      assertThat(queued(store)).isZero();
    }
    assertThat(snapshotVersions(other)).isEmpty();
  }

  @Test
  void aVersionThatDeletesMuchOfTheStoreIsSnapshottedOnceItsCompactionEnded() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    TreeMap<String, String> model = new TreeMap<>();
    int keys = 200_000;
    int evicted = 150_000;
    try (VersionedStore store = open(durable, "a", FLOOR_DECIDES)) {
      commit(store, 1, 0, keys, model);
      awaitSnapshot(durable, 1);
      // Version 2 deletes three quarters of the keys (an eviction): a compaction of the family
      // starts after its apply, and the replay-debt snapshot it also queues waits for it.
      try (StateTransaction tx = store.begin(1)) {
        for (int i = 0; i < evicted; i++) {
          String key = String.format("k%05d", i);
          tx.delete("default", bytes(key));
          model.remove(key);
        }
        assertThat(tx.commit()).isEqualTo(2);
      }
      awaitSnapshot(durable, 2);
    }
    // Snapshotted before the compaction, version 2 would restore version 1's files plus the
    // tombstones (more bytes than version 1); after it, only the live quarter.
    assertThat(snapshotBytes(durable, 2)).isLessThan(snapshotBytes(durable, 1) / 2);
    try (VersionedStore store =
            open(ForcedSnapshotTest.withoutChangelogs(durable), "b", FLOOR_DECIDES);
        StateTransaction tx = store.begin(2)) {
      assertThat(EngineFixture.contents(tx)).isEqualTo(model);
    }
  }

  /** The bytes of database files the snapshot of {@code version} restores. */
  private static long snapshotBytes(InMemoryStorage durable, long version) {
    List<String> manifests =
        durable.names().stream()
            .filter(n -> StoreLayout.parseSnapshot(n) != null)
            .filter(n -> StoreLayout.parseSnapshot(n).version() == version)
            .toList();
    assertThat(manifests).hasSize(1);
    String name = manifests.get(0);
    return SnapshotManifest.decode(
            FramedFile.readPayload(durable, name, FileKind.SNAPSHOT_MANIFEST), name)
        .totalLength();
  }

  private VersionedStore open(InMemoryStorage durable, String dir, StoreOptions options) {
    return VersionedStore.builder("s", durable)
        .localDir(tmp.resolve(dir))
        .options(options)
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  /**
   * Commits version {@code v}: {@code count} keys from {@code first} set to values of {@code v}.
   */
  private static void commit(
      VersionedStore store, long v, int first, int count, TreeMap<String, String> model) {
    try (StateTransaction tx = store.begin(v - 1)) {
      for (int i = first; i < first + count; i++) {
        String key = String.format("k%05d", i);
        String value = "v" + v + "-" + i;
        tx.put("default", bytes(key), bytes(value));
        model.put(key, value);
      }
      assertThat(tx.commit()).isEqualTo(v);
    }
  }

  private static long queued(VersionedStore store) {
    return store.metrics().snapshot().replayDebtSnapshots();
  }

  private static void awaitSnapshot(InMemoryStorage durable, long version) {
    await()
        .atMost(WAIT)
        .untilAsserted(() -> assertThat(snapshotVersions(durable)).contains(version));
  }
}
