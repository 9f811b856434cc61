package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's eviction deletes each key its scan returns; a transaction keeps such deletions in a
 * sorted array beside its sorted map ({@link Overlay}, "scan deletions"). Checked against a sorted
 * map holding the same state: scans that delete most keys they return while changing keys ahead of
 * them, behind them (among the scan deletions already made) and at them, then reads, a second scan
 * (whose deletions go to the map: they are not past the first scan's), the commit, and the state
 * read back from the local instance and, after a restart on a new local directory, from the
 * changelogs alone.
 */
class ScanDeletionsTest {
  @TempDir Path tmp;

  private static byte[] key(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  private static int number(byte[] key) {
    return ByteBuffer.wrap(key).getInt();
  }

  private static final int KEYS = 6_000;

  @Test
  void scansThatDeleteWhatTheyReturnLeaveTheStateAModelHolds() {
    Path durable = tmp.resolve("durable");
    TreeMap<Integer, Integer> model = new TreeMap<>();
    long version = 0;
    long scanDeletions = 0;
    long peekingScanDeletions = 0;
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20)) {
      try (VersionedStore store = open(durable, tmp.resolve("local-1"), resources, budget)) {
        for (int seed = 0; seed < 12; seed++) {
          Random random = new Random(seed);
          try (StateTransaction tx = store.begin(version)) {
            for (int i = 0; i < KEYS; i += 1 + random.nextInt(2)) {
              if (!model.containsKey(i) || random.nextInt(3) == 0) {
                tx.put("default", key(i), key(seed));
                model.put(i, seed);
              }
            }
            version = tx.commit();
          }
          try (StateTransaction tx = store.begin(version)) {
            // Odd seeds look ahead before each change, as Spark's join eviction does.
            boolean peek = seed % 2 == 1;
            evict(tx, random, model, seed, peek);
            scanDeletions += tx.scanDeletions("default");
            if (peek) {
              peekingScanDeletions += tx.scanDeletions("default");
            }
            // A second scan steps over the first one's deletions.
            evict(tx, random, model, seed + 100, false);
            for (int i = 0; i < 2_000; i++) {
              int k = random.nextInt(KEYS);
              if (random.nextBoolean()) {
                assertThat(number(orNull(tx.get("default", key(k)))))
                    .as("seed %d get %d", seed, k)
                    .isEqualTo(model.getOrDefault(k, -1));
              } else {
                assertThat(tx.exists("default", key(k)))
                    .as("seed %d exists %d", seed, k)
                    .isEqualTo(model.containsKey(k));
              }
            }
            for (int i = 0; i < 50; i++) { // scans that start among the scan deletions
              int from = random.nextInt(KEYS);
              int to = from + random.nextInt(KEYS / 4);
              List<Integer> keys = new ArrayList<>();
              try (CloseableIterator<KeyValue> it =
                  tx.rangeIterator("default", key(from), key(to))) {
                it.forEachRemaining(kv -> keys.add(number(kv.key())));
              }
              assertThat(keys)
                  .as("seed %d range [%d, %d)", seed, from, to)
                  .isEqualTo(new ArrayList<>(model.subMap(from, to).keySet()));
            }
            assertThat(tx.changeCount()).isPositive();
            version = tx.commit();
          }
          try (StateTransaction tx = store.begin(version)) {
            assertThat(contents(tx)).as("seed %d, the local instance", seed).isEqualTo(model);
          }
        }
      }
      assertThat(scanDeletions).as("deletions kept as scan deletions").isGreaterThan(10_000);
      assertThat(peekingScanDeletions)
          .as("deletions kept as scan deletions by scans that look ahead")
          .isGreaterThan(5_000);
      // The changelogs alone (each deleted key listed) rebuild the same state.
      try (VersionedStore store = open(durable, tmp.resolve("local-2"), resources, budget);
          StateTransaction tx = store.begin(version)) {
        assertThat(contents(tx)).as("restored from durable storage").isEqualTo(model);
      }
    }
  }

  /**
   * One scan from the start: most returned keys deleted (as Spark's eviction, with {@code
   * deleteAndCheckExisted}), a few kept, and changes ahead of the scan, behind it and at the key it
   * returned, each checked against the model step by step. With {@code peek}, each change comes
   * after {@code hasNext} (which finds the next entry) and none is ahead of the scan.
   */
  private static void evict(
      StateTransaction tx, Random random, TreeMap<Integer, Integer> model, int seed, boolean peek) {
    Integer last = null;
    try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
      while (true) {
        Integer expected = last == null ? model.ceilingKey(0) : model.higherKey(last);
        assertThat(it.hasNext()).as("seed %d after %s", seed, last).isEqualTo(expected != null);
        if (expected == null) {
          return;
        }
        KeyValue kv = it.next();
        assertThat(number(kv.key())).as("seed %d after %s", seed, last).isEqualTo(expected);
        assertThat(number(kv.value())).isEqualTo(model.get(expected));
        last = expected;
        if (peek) {
          assertThat(it.hasNext()).isEqualTo(model.higherKey(last) != null);
        }
        int choice = random.nextInt(1000);
        if (peek && choice >= 985 && choice < 994) {
          continue; // a change ahead of an entry hasNext already found is not seen
        }
        if (choice < 960) {
          assertThat(tx.deleteAndCheckExisted("default", kv.key().clone()))
              .as("seed %d returned key %d existed", seed, last)
              .isTrue();
          model.remove(last);
        } else if (choice < 975) {
          tx.delete("default", key(last));
          model.remove(last);
        } else if (choice < 985 && last > 0) { // behind: among the scan deletions
          int behind = random.nextInt(last);
          if (random.nextBoolean()) {
            tx.put("default", key(behind), key(7_000 + behind));
            model.put(behind, 7_000 + behind);
          } else {
            assertThat(tx.deleteAndCheckExisted("default", key(behind)))
                .as("seed %d key %d behind existed", seed, behind)
                .isEqualTo(model.remove(behind) != null);
          }
        } else if (choice < 990) { // ahead: seen when reached
          int ahead = last + 1 + random.nextInt(20);
          tx.put("default", key(ahead), key(8_000 + ahead));
          model.put(ahead, 8_000 + ahead);
        } else if (choice < 994) { // ahead: gone before reached
          int ahead = last + 1 + random.nextInt(6);
          tx.delete("default", key(ahead));
          model.remove(ahead);
        } else if (choice < 997) { // deleted, then put again at once
          tx.delete("default", key(last));
          tx.put("default", key(last), key(9_000));
          model.put(last, 9_000);
        } else if (choice < 999) { // changed, then deleted: no longer the key as returned
          tx.put("default", key(last), key(9_500));
          assertThat(tx.deleteAndCheckExisted("default", key(last))).isTrue();
          model.remove(last);
        } // else kept
      }
    }
  }

  /**
   * A scan finds its next entry in {@code hasNext}; when the caller changes that key before {@code
   * next} returns it and then deletes it, the deletion holds (the returned entry is no longer the
   * key as the transaction holds it, so it must not be kept as a scan deletion the change would
   * override).
   */
  @Test
  void aKeyChangedAfterHasNextFoundItIsDeletedWhenDeleted() {
    Path durable = tmp.resolve("durable");
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20);
        VersionedStore store = open(durable, tmp.resolve("local"), resources, budget)) {
      long version;
      try (StateTransaction tx = store.begin(0)) {
        for (int i = 0; i < 10; i++) {
          tx.put("default", key(i), key(i));
        }
        version = tx.commit();
      }
      try (StateTransaction tx = store.begin(version)) {
        try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
          for (int i = 0; i < 10; i++) {
            assertThat(it.hasNext()).isTrue();
            tx.put("default", key(i), key(100 + i)); // after hasNext found key i
            KeyValue kv = it.next();
            assertThat(number(kv.key())).isEqualTo(i);
            if (i % 2 == 0) {
              assertThat(tx.deleteAndCheckExisted("default", kv.key())).isTrue();
            }
          }
        }
        Map<Integer, Integer> expected = new TreeMap<>();
        for (int i = 1; i < 10; i += 2) {
          expected.put(i, 100 + i);
        }
        assertThat(contents(tx)).isEqualTo(expected);
        version = tx.commit();
      }
      try (StateTransaction tx = store.begin(version)) {
        assertThat(contents(tx)).as("committed").hasSize(5).doesNotContainKeys(0, 2, 4, 6, 8);
      }
    }
  }

  private static byte[] orNull(byte[] value) {
    return value == null ? key(-1) : value;
  }

  private static Map<Integer, Integer> contents(StateTransaction tx) {
    TreeMap<Integer, Integer> out = new TreeMap<>();
    List<Integer> order = new ArrayList<>();
    try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
      while (it.hasNext()) {
        KeyValue kv = it.next();
        out.put(number(kv.key()), number(kv.value()));
        order.add(number(kv.key()));
      }
    }
    assertThat(order).isSorted();
    for (Map.Entry<Integer, Integer> e : out.entrySet()) {
      assertThat(number(tx.get("default", key(e.getKey())))).isEqualTo(e.getValue());
    }
    return out;
  }

  private static VersionedStore open(
      Path durable, Path local, ProcessResources resources, RocksDbMemoryBudget budget) {
    return VersionedStore.builder("scan-deletions", new LocalStorage(durable))
        .localDir(local)
        .resources(resources)
        .memoryBudget(budget)
        .open();
  }
}
