package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An iterator is a live view (Spark's store contract): each step returns the smallest key after the
 * last one returned, as the transaction holds it at that step. Changes made while iterating, at the
 * key just returned (Spark's eviction), before it or after it, are checked step by step against a
 * sorted map that holds the same state, over committed keys and uncommitted ones.
 */
class LiveIterationTest {
  @TempDir Path tmp;

  private static byte[] key(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  private static int number(byte[] key) {
    return ByteBuffer.wrap(key).getInt();
  }

  @Test
  void everyStepReturnsTheNextKeyOfTheStateAsItIsThen() {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20);
        VersionedStore store =
            VersionedStore.builder("s", new LocalStorage(tmp.resolve("durable")))
                .localDir(tmp.resolve("local"))
                .resources(resources)
                .memoryBudget(budget)
                .open()) {
      for (int seed = 0; seed < 20; seed++) {
        Random random = new Random(seed);
        TreeMap<Integer, Integer> model = new TreeMap<>();
        long version;
        // A fresh start: the previous seed's keys deleted, the new ones committed.
        try (StateTransaction tx = store.begin(Math.max(0, store.localVersion()))) {
          try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
            while (it.hasNext()) {
              tx.delete("default", it.next().key());
            }
          }
          for (int i = 0; i < 400; i += 2) {
            tx.put("default", key(i), key(seed));
            model.put(i, seed);
          }
          version = tx.commit();
        }
        try (StateTransaction tx = store.begin(version)) {
          for (int i = 1; i < 100; i += 4) { // uncommitted keys among the committed ones
            tx.put("default", key(i), key(-1));
            model.put(i, -1);
          }
          List<Integer> returned = new ArrayList<>();
          try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
            Integer last = null;
            while (true) {
              Integer expected = last == null ? model.ceilingKey(0) : model.higherKey(last);
              assertThat(it.hasNext())
                  .as("seed %d after %s", seed, last)
                  .isEqualTo(expected != null);
              if (expected == null) {
                break;
              }
              KeyValue kv = it.next();
              assertThat(number(kv.key())).as("seed %d after %s", seed, last).isEqualTo(expected);
              assertThat(number(kv.value())).isEqualTo(model.get(expected));
              last = expected;
              returned.add(last);
              int choice = random.nextInt(8);
              if (choice < 3) { // the key just returned: Spark's eviction
                tx.delete("default", key(last));
                model.remove(last);
              } else if (choice == 3) { // ahead of the iterator: seen when reached
                int ahead = last + 1 + random.nextInt(20);
                tx.put("default", key(ahead), key(1000 + ahead));
                model.put(ahead, 1000 + ahead);
              } else if (choice == 4) { // ahead: gone before reached
                int ahead = last + 1 + random.nextInt(6);
                tx.delete("default", key(ahead));
                model.remove(ahead);
              } else if (choice == 5 && last > 0) { // behind: never returned again
                int behind = random.nextInt(last);
                tx.put("default", key(behind), key(7));
                model.put(behind, 7);
              } else if (choice == 6) { // two changes: at the key, then ahead
                tx.delete("default", key(last));
                model.remove(last);
                int ahead = last + 1 + random.nextInt(3);
                tx.put("default", key(ahead), key(2000 + ahead));
                model.put(ahead, 2000 + ahead);
              }
            }
          }
          assertThat(returned).as("seed %d", seed).isNotEmpty();
          tx.commit();
        }
      }
    }
  }
}
