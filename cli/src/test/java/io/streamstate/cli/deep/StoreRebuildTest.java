package io.streamstate.cli.deep;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link StoreRebuild} on a store written by core's engine with counts right and wrong. */
class StoreRebuildTest {
  @TempDir Path dir;

  private static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] count(long n) {
    return ByteBuffer.allocate(8).putLong(n).array();
  }

  /** Version 1: three keys in "default", and the count recorded for it. */
  private void write(LocalStorage storage, ProcessResources resources, long recorded) {
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(32L << 20);
        VersionedStore store =
            VersionedStore.builder("0/0", storage)
                .prefix("0/0/")
                .localDir(dir.resolve("writer"))
                .memoryBudget(budget)
                .resources(resources)
                .open()) {
      StateTransaction tx = store.begin(0);
      tx.createColumnFamily("default");
      tx.createColumnFamily(StoreRebuild.ROW_COUNTS_FAMILY);
      for (String k : new String[] {"a", "b", "c"}) {
        tx.put("default", bytes(k), bytes("v"));
      }
      tx.put(StoreRebuild.ROW_COUNTS_FAMILY, bytes("default"), count(recorded));
      tx.commit();
    }
  }

  @Test
  void findsTheRecordedCountsOfARebuiltStore() {
    try (ProcessResources resources = new ProcessResources("test");
        LocalStorage storage = new LocalStorage(dir.resolve("state"))) {
      write(storage, resources, 3);

      StoreRebuild.Result r =
          StoreRebuild.rebuild(
              resources, storage, "0/0", "0/0/", 1, OptionalLong.empty(), dir.resolve("scratch"));

      assertThat(r.counted()).containsEntry("default", 3L);
      assertThat(r.recorded()).containsEntry("default", 3L);
      assertThat(r.mismatches()).isEmpty();
    }
  }

  @Test
  void namesAFamilyWhoseKeysDifferFromItsRecordedCount() {
    try (ProcessResources resources = new ProcessResources("test");
        LocalStorage storage = new LocalStorage(dir.resolve("state"))) {
      write(storage, resources, 5);

      StoreRebuild.Result r =
          StoreRebuild.rebuild(
              resources, storage, "0/0", "0/0/", 1, OptionalLong.empty(), dir.resolve("scratch"));

      assertThat(r.mismatches()).containsOnlyKeys("default");
      assertThat(r.mismatches().get("default")).containsExactly(3, 5);
    }
  }
}
