package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RocksDB's own memory account of the process counts what open stores hold, and only those. */
class ProcessMemoryUsageTest {
  @TempDir Path tmp;

  @Test
  void memtablesOfAnOpenStoreAreCountedAndAClosedStoreLeavesTheCount() {
    long instancesBefore =
        RocksDbMemoryBudget.processUsage(ProcessResources.shared()).get("openInstances");
    Map<String, Long> open;
    // No heap mirrors: a mirrored store's RocksDB lags (its memtables would stay empty).
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(64L << 20, 0);
        VersionedStore store =
            VersionedStore.builder("mem", new InMemoryStorage())
                .prefix("0/0/")
                .localDir(tmp.resolve("local"))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open()) {
      try (StateTransaction tx = store.begin(0)) {
        for (int i = 0; i < 20_000; i++) {
          tx.put("default", EngineFixture.bytes("key-" + i), new byte[100]);
        }
        tx.commit();
      }
      // The commit returns before RocksDB has the rows; the next version's transaction waits.
      store.begin(1).close();
      open = RocksDbMemoryBudget.processUsage(ProcessResources.shared());
      assertThat(open.get("openInstances")).isEqualTo(instancesBefore + 1);
      // 20,000 rows of 100+ bytes sit in the memtable (far below the write buffer size).
      assertThat(open.get("memtableBytes")).isGreaterThan(2_000_000L);
      assertThat(open).containsKeys("tableReaderBytes");
    }
    Map<String, Long> closed = RocksDbMemoryBudget.processUsage(ProcessResources.shared());
    assertThat(closed.get("openInstances")).isEqualTo(instancesBefore);
    assertThat(closed.get("memtableBytes")).isLessThan(open.get("memtableBytes"));
  }
}
