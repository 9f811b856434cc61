package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's eviction pattern: every version deletes the smallest keys while scanning from the start.
 * Scans start past the keys known deleted; these tests check that a key put below that point later,
 * in a later version or the same one, in any family, is still seen by every kind of scan.
 */
class EvictionScanTest {
  @TempDir Path tmp;

  private static List<String> keys(CloseableIterator<KeyValue> it) {
    List<String> out = new ArrayList<>();
    try (it) {
      while (it.hasNext()) {
        out.add(new String(it.next().key(), StandardCharsets.UTF_8));
      }
    }
    return out;
  }

  @Test
  void keysPutBelowTheEvictedOnesAreSeenByLaterScans() {
    try (VersionedStore store =
        VersionedStore.builder("e", new InMemoryStorage())
            .localDir(tmp.resolve("l"))
            .options(StoreOptions.defaults())
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      long v = 0;
      try (StateTransaction tx = store.begin(v)) {
        for (String k : List.of("b1", "b2", "c1", "c2", "d1")) {
          tx.put("default", bytes(k), bytes("x"));
        }
        v = tx.commit();
      }
      // Evict b* while scanning: the scan starts at b1.
      try (StateTransaction tx = store.begin(v)) {
        try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
          while (it.hasNext()) {
            byte[] k = it.next().key();
            if (k[0] == 'b') {
              assertThat(tx.deleteAndCheckExisted("default", k)).isTrue();
            }
          }
        }
        v = tx.commit();
      }
      // A scan now starts at c1 (nothing live below it); then a key below it is put.
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("default"))).containsExactly("c1", "c2", "d1");
        assertThat(tx.exists("default", bytes("b1"))).isFalse();
        tx.put("default", bytes("a1"), bytes("y"));
        assertThat(keys(tx.iterator("default"))).containsExactly("a1", "c1", "c2", "d1");
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("default"))).containsExactly("a1", "c1", "c2", "d1");
        assertThat(keys(tx.rangeIterator("default", bytes("a"), null)))
            .containsExactly("a1", "c1", "c2", "d1");
        assertThat(keys(tx.rangeIterator("default", bytes("b"), bytes("d"))))
            .containsExactly("c1", "c2");
        assertThat(keys(tx.prefixIterator("default", bytes("a")))).containsExactly("a1");
        assertThat(tx.putAndCheckExisted("default", bytes("a1"), bytes("z"))).isTrue();
        assertThat(tx.putAndCheckExisted("default", bytes("b2"), bytes("z"))).isFalse();
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("default"))).containsExactly("a1", "b2", "c1", "c2", "d1");
        tx.abort();
      }
      // Dropped and re-created: nothing of the old family's scans carries over.
      try (StateTransaction tx = store.begin(v)) {
        tx.createColumnFamily("cf");
        tx.put("cf", bytes("m"), bytes("1"));
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("cf"))).containsExactly("m");
        tx.dropColumnFamily("cf");
        tx.createColumnFamily("cf");
        tx.put("cf", bytes("a"), bytes("2"));
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("cf"))).containsExactly("a");
        tx.abort();
      }
    }
  }

  /**
   * A long eviction (the transaction keeps it as scan deletions beside its sorted map), with a key
   * put again among the deleted ones, in the same transaction and the next: read back from the
   * local instance (this test also runs on Spark 3.5's RocksDB 8.3) and, on a new local directory,
   * from the changelogs alone.
   */
  @Test
  void aLongEvictionReadsBackAsEachKeyDeleted() {
    InMemoryStorage storage = new InMemoryStorage();
    List<String> expected = new ArrayList<>();
    long v = 0;
    try (VersionedStore store = open(storage, tmp.resolve("l1"))) {
      try (StateTransaction tx = store.begin(v)) {
        for (int i = 0; i < 3_000; i++) {
          tx.put("default", bytes(String.format("k%04d", i)), bytes("x"));
        }
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
          while (it.hasNext()) {
            byte[] k = it.next().key();
            if (new String(k, StandardCharsets.UTF_8).compareTo("k2000") < 0) {
              assertThat(tx.deleteAndCheckExisted("default", k)).isTrue();
            }
          }
        }
        tx.put("default", bytes("k0500"), bytes("again"));
        assertThat(tx.exists("default", bytes("k0499"))).isFalse();
        assertThat(tx.get("default", bytes("k0500"))).isEqualTo(bytes("again"));
        v = tx.commit();
      }
      expected.add("k0500");
      for (int i = 2_000; i < 3_000; i++) {
        expected.add(String.format("k%04d", i));
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("default"))).isEqualTo(expected);
        assertThat(tx.get("default", bytes("k1999"))).isNull();
        assertThat(tx.exists("default", bytes("k0000"))).isFalse();
        tx.put("default", bytes("k1000"), bytes("later"));
        v = tx.commit();
      }
      expected.add(1, "k1000");
      try (StateTransaction tx = store.begin(v)) {
        assertThat(keys(tx.iterator("default"))).isEqualTo(expected);
        assertThat(tx.get("default", bytes("k1000"))).isEqualTo(bytes("later"));
        tx.abort();
      }
    }
    try (VersionedStore store = open(storage, tmp.resolve("l2"));
        StateTransaction tx = store.begin(v)) {
      assertThat(keys(tx.iterator("default"))).isEqualTo(expected);
    }
  }

  private VersionedStore open(InMemoryStorage storage, Path localDir) {
    return VersionedStore.builder("e", storage)
        .localDir(localDir)
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }
}
