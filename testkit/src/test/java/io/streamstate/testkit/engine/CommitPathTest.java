package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreMetrics;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What the commit and load paths cost in storage calls, and the shared memory budget. */
class CommitPathTest {
  @TempDir Path tmp;

  @Test
  void commitIsOneCreateAndWarmLoadReadsNothing() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 0).build();
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20);
        VersionedStore store =
            VersionedStore.builder("s", storage)
                .localDir(tmp.resolve("l"))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open()) {
      for (long v = 1; v <= 20; v++) {
        long before = storage.callCount();
        try (StateTransaction tx = store.begin(v - 1)) { // warm from version 1 on
          writeVersion(tx, v);
          tx.commit();
        }
        List<FaultInjectingStorage.Call> calls =
            storage.calls().subList((int) before, (int) storage.callCount());
        // Version 0 is the empty state and later loads are warm: the commit's create is all.
        assertThat(calls).as("version %d", v).hasSize(1);
        assertThat(calls.get(0).kind()).isEqualTo(CallKind.CREATE);
        assertThat(calls.get(0).name())
            .matches(String.format("changelog/%020d-[0-9a-f]{16}\\.changelog", v));
      }
      assertThat(storage.callCount(CallKind.LIST)).isZero();
      assertThat(storage.callCount(CallKind.OPEN)).isZero();
      assertThat(store.metrics().snapshot().warmLoads()).isEqualTo(19);
    }
  }

  /**
   * Values far beyond what a load's buffers first assume (64 bytes a change) and beyond a memtable:
   * a 100 MB value goes through the changelog, the local write batch, a snapshot and a cold load on
   * another instance, byte for byte.
   */
  @Test
  void aHundredMegabyteValueCommitsSnapshotsAndLoadsColdByteForByte() {
    byte[] big = new byte[100 << 20];
    new Random(7).nextBytes(big); // incompressible: the deflated changelog is as large
    byte[] bigKey = EngineFixture.bytes("big");
    LocalStorage durable = new LocalStorage(tmp.resolve("durable"));
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20)) {
      try (VersionedStore writer = openStore("w", durable, budget)) {
        try (StateTransaction tx = writer.begin(0)) {
          writeVersion(tx, 1);
          tx.put("default", bigKey, big);
          tx.commit();
        }
        try (StateTransaction tx = writer.begin(1)) {
          assertThat(tx.get("default", bigKey)).isEqualTo(big);
          writeVersion(tx, 2);
          tx.commit();
        }
        assertThat(writer.snapshotNow()).isEqualTo(2);
        try (StateTransaction tx = writer.begin(2)) {
          writeVersion(tx, 3);
          tx.commit();
        }
      }
      // Cold, from the snapshot of version 2 and version 3's changelog; and from changelogs alone.
      for (long v : new long[] {3, 1}) {
        try (VersionedStore reader = openStore("r" + v, durable, budget);
            StateTransaction tx = reader.begin(v)) {
          assertThat(tx.get("default", bigKey)).as("version %d", v).isEqualTo(big);
          TreeMap<String, String> small = EngineFixture.contents(tx);
          small.remove("big");
          assertThat(small).isEqualTo(EngineFixture.reference(v));
        }
      }
    }
  }

  private VersionedStore openStore(String dir, LocalStorage durable, RocksDbMemoryBudget budget) {
    return VersionedStore.builder("s", durable)
        .localDir(tmp.resolve(dir))
        .options(StoreOptions.defaults())
        .memoryBudget(budget)
        .open();
  }

  /**
   * Cold loads, the ones a moved partition or a lost executor costs, are counted apart: a load by
   * an instance that held no version of the store. The empty state, warm loads and catching up from
   * an older local version are not cold.
   */
  @Test
  void onlyALoadByAnInstanceHoldingNoVersionIsCold() {
    LocalStorage durable = new LocalStorage(tmp.resolve("durable"));
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20);
        VersionedStore writer = openStore("w", durable, budget);
        VersionedStore other = openStore("o", durable, budget)) {
      for (long v = 1; v <= 3; v++) {
        try (StateTransaction tx = writer.begin(v - 1)) { // version 0, then warm
          writeVersion(tx, v);
          tx.commit();
        }
      }
      assertThat(writer.metrics().snapshot())
          .returns(1L, StoreMetrics.Snapshot::durableLoads)
          .returns(2L, StoreMetrics.Snapshot::warmLoads)
          .returns(0L, StoreMetrics.Snapshot::coldLoads);

      try (StateTransaction tx = other.begin(2)) { // another executor takes the partition
        assertState(tx, 2);
      }
      try (StateTransaction tx = other.begin(3)) { // catches up from its own version 2
        assertState(tx, 3);
      }
      assertThat(other.metrics().snapshot())
          .returns(2L, StoreMetrics.Snapshot::durableLoads)
          .returns(1L, StoreMetrics.Snapshot::coldLoads);
    }
  }

  @Test
  void loadOfANewerVersionReplaysOnlyTheMissingChangelogs() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 0).build();
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20);
        VersionedStore a =
            VersionedStore.builder("a", durable)
                .localDir(tmp.resolve("a"))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open();
        VersionedStore b =
            VersionedStore.builder("b", storage)
                .localDir(tmp.resolve("b"))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open()) {
      for (long v = 1; v <= 5; v++) {
        try (StateTransaction tx = a.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
      }
      try (StateTransaction tx = b.begin(3)) {
        assertState(tx, 3);
      }
      long before = storage.callCount(CallKind.OPEN);
      try (StateTransaction tx = b.begin(5)) { // the partition moved back: catch up 4 and 5
        assertState(tx, 5);
      }
      assertThat(storage.callCount(CallKind.OPEN) - before).isEqualTo(2);
      // The cold load lists changelogs, segments and snapshots; catching up lists changelogs and
      // segments alone, to find the commits of 4 and 5 that lead back to the local commit of 3.
      assertThat(storage.callCount(CallKind.LIST)).isEqualTo(5);
    }
  }

  @Test
  void maintenanceListsOnlyWhenANewSnapshotCouldMoveTheRetentionBase() {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 0).build();
    StoreOptions options =
        StoreOptions.defaults().withMinVersionsToRetain(3).withSnapshotInterval(5);
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20);
        VersionedStore store =
            VersionedStore.builder("s", storage)
                .localDir(tmp.resolve("l"))
                .options(options)
                .memoryBudget(budget)
                .open()) {
      List<Long> listsPerRun = new ArrayList<>();
      List<Integer> deletedPerRun = new ArrayList<>();
      for (long v = 1; v <= 14; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
        long before = storage.callCount(CallKind.LIST);
        deletedPerRun.add(store.applyRetention());
        listsPerRun.add(storage.callCount(CallKind.LIST) - before);
        store.snapshotIfDue(); // snapshots at 5 and 10
      }
      // Versions 1-3: too young to delete anything, nothing listed. Version 4: the first run
      // lists (and finds no base). Then a run lists only once a snapshot (5, 10) falls at or below
      // the oldest version to keep (v - 2): at v = 7 and v = 12, and each deletes.
      for (int i = 0; i < listsPerRun.size(); i++) {
        long v = i + 1;
        boolean lists = v == 4 || v == 7 || v == 12;
        assertThat(listsPerRun.get(i) > 0).as("lists at version %d", v).isEqualTo(lists);
        assertThat(deletedPerRun.get(i) > 0)
            .as("deletes at version %d", v)
            .isEqualTo(v >= 7 && lists);
      }
    }
  }

  @Test
  void allStoresShareOneBoundedMemoryBudget() {
    long cap = 16L << 20;
    List<VersionedStore> stores = new ArrayList<>();
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(cap)) {
      InMemoryStorage durable = new InMemoryStorage();
      for (int i = 0; i < 4; i++) {
        stores.add(
            VersionedStore.builder("s" + i, durable)
                .prefix("s" + i + "/")
                .localDir(tmp.resolve("m" + i))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open());
      }
      Random random = new Random(1);
      byte[] value = new byte[1000];
      // 4 stores x 5 versions x 4000 keys x 1 KB = 80 MB written, five times the cap.
      for (long v = 1; v <= 5; v++) {
        for (VersionedStore store : stores) {
          try (StateTransaction tx = store.begin(v - 1)) {
            for (int k = 0; k < 4000; k++) {
              random.nextBytes(value);
              tx.put("default", ("k" + v + "-" + k).getBytes(), value);
            }
            tx.commit();
          }
        }
      }
      // Memtables of all four were charged to the one cache while they filled (so it is in use);
      // once flushed (a snapshot flushes), what stays charged is within the cap.
      assertThat(budget.usedBytes()).isPositive();
      for (VersionedStore store : stores) {
        store.snapshotNow();
      }
      assertThat(budget.usedBytes()).isPositive().isLessThanOrEqualTo(cap);
      for (VersionedStore store : stores) {
        try (StateTransaction tx = store.begin(5)) {
          assertThat(tx.get("default", "k5-3999".getBytes())).hasSize(1000);
        }
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
  }
}
