package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Spark's aggregation and deduplication read a key, then put it: the put's answer to "did it
 * exist?" (what counts the store's rows) comes from the read when the key is the one read last.
 * Checked against a model over two heap-mirrored families that hold the same keys differently, so
 * an answer carried from one family's read to the other's write, or from an older read, is wrong.
 */
class ReadThenWriteTest {
  @TempDir Path tmp;

  private static final List<String> FAMILIES = List.of("default", "other");

  private static byte[] key(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  @Test
  void aWriteAfterAReadOfTheSameKeyReportsWhatExistedBefore() {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20);
        VersionedStore store =
            VersionedStore.builder("read-then-write", new LocalStorage(tmp.resolve("durable")))
                .localDir(tmp.resolve("local"))
                .resources(resources)
                .memoryBudget(budget)
                .open()) {
      Map<String, TreeMap<Integer, Integer>> model =
          Map.of("default", new TreeMap<>(), "other", new TreeMap<>());
      long version;
      try (StateTransaction tx = store.begin(0)) {
        tx.createColumnFamily("other");
        for (int i = 0; i < 200; i++) { // even keys in one family, multiples of three in the other
          if (i % 2 == 0) {
            tx.put("default", key(i), key(i));
            model.get("default").put(i, i);
          }
          if (i % 3 == 0) {
            tx.put("other", key(i), key(i));
            model.get("other").put(i, i);
          }
        }
        version = tx.commit();
      }
      Random random = new Random(21);
      long memoAnswers = 0;
      for (int round = 0; round < 30; round++) {
        try (StateTransaction tx = store.begin(version)) {
          for (int op = 0; op < 300; op++) {
            int k = random.nextInt(220);
            String readFamily = FAMILIES.get(random.nextInt(2));
            // Mostly the family read, sometimes the other one (same key bytes, other answer).
            String writeFamily =
                random.nextInt(4) == 0
                    ? FAMILIES.get(1 - FAMILIES.indexOf(readFamily))
                    : readFamily;
            TreeMap<Integer, Integer> read = model.get(readFamily);
            TreeMap<Integer, Integer> written = model.get(writeFamily);
            byte[] value = tx.get(readFamily, key(k));
            assertThat(value == null ? null : ByteBuffer.wrap(value).getInt())
                .as("round %d: read %d of %s", round, k, readFamily)
                .isEqualTo(read.get(k));
            boolean existed = written.containsKey(k);
            if (random.nextInt(3) == 0) {
              assertThat(tx.deleteAndCheckExisted(writeFamily, key(k)))
                  .as(
                      "round %d: delete %d of %s after reading %s",
                      round, k, writeFamily, readFamily)
                  .isEqualTo(existed);
              written.remove(k);
            } else {
              assertThat(tx.putAndCheckExisted(writeFamily, key(k), key(round)))
                  .as("round %d: put %d of %s after reading %s", round, k, writeFamily, readFamily)
                  .isEqualTo(existed);
              written.put(k, round);
            }
            if (writeFamily.equals(readFamily)) {
              memoAnswers++;
            }
          }
          version = tx.commit();
        }
      }
      assertThat(memoAnswers).isGreaterThan(1000);
      try (StateTransaction tx = store.begin(version)) {
        for (String family : FAMILIES) {
          for (int k = 0; k < 220; k++) {
            assertThat(tx.exists(family, key(k)))
                .as("%s %d at the end", family, k)
                .isEqualTo(model.get(family).containsKey(k));
          }
        }
      }
    }
  }
}
