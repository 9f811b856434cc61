package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two writers committing the same version (a task retry, a speculative duplicate, a zombie, a batch
 * re-run after a driver restart): both commits succeed under attempt-unique names, a reader sees
 * exactly one writer's state, never a mix, and every version built on one writer's commit loads
 * with that writer's changes, whatever the other wrote later.
 */
class RacingWritersTest {
  private static final int ROUNDS = 100;
  @TempDir Path tmp;
  private static final RocksDbMemoryBudget budget = EngineFixture.BUDGET;

  @Test
  void racingWritersNeverMixOnLocalDisk() throws Exception {
    race(new LocalStorage(tmp.resolve("durable")));
  }

  @Test
  void racingWritersNeverMixInMemory() throws Exception {
    race(new InMemoryStorage());
  }

  private void race(Storage storage) throws Exception {
    StoreOptions options = StoreOptions.defaults();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try (VersionedStore a =
            VersionedStore.builder("a", storage)
                .localDir(tmp.resolve("a"))
                .options(options)
                .memoryBudget(budget)
                .open();
        VersionedStore b =
            VersionedStore.builder("b", storage)
                .localDir(tmp.resolve("b"))
                .options(options)
                .memoryBudget(budget)
                .open()) {
      Map<String, Integer> seen = new TreeMap<>();
      for (int round = 0; round < ROUNDS; round++) {
        long v = round;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<Long>> results = new ArrayList<>();
        for (VersionedStore writer : List.of(a, b)) {
          StateTransaction tx = writer.begin(v);
          // 200 keys each, all different values per writer: a mix would be visible.
          for (int i = 0; i < 200; i++) {
            tx.put("default", bytes("key" + i), bytes(writer.name() + round));
          }
          results.add(
              pool.submit(
                  () -> {
                    start.await();
                    return tx.commit();
                  }));
        }
        start.countDown();
        assertThat(results.get(0).get()).isEqualTo(v + 1);
        assertThat(results.get(1).get()).isEqualTo(v + 1);
        // A fresh reader (cold load) sees one writer's whole commit.
        try (VersionedStore reader =
                VersionedStore.builder("r", storage)
                    .localDir(tmp.resolve("r"))
                    .options(options)
                    .memoryBudget(budget)
                    .open();
            StateTransaction tx = reader.begin(v + 1)) {
          List<String> values = new ArrayList<>();
          tx.iterator("default")
              .forEachRemaining(kv -> values.add(new String(kv.value(), StandardCharsets.UTF_8)));
          assertThat(values).hasSize(200);
          assertThat(values.stream().distinct().toList()).as("round %d", round).hasSize(1);
          assertThat(values.get(0)).isIn("a" + round, "b" + round);
          seen.merge(values.get(0).substring(0, 1), 1, Integer::sum);
        }
      }
      System.out.printf(
          "racing writers on %s: %d rounds, reader saw %s%n", storage.describe(), ROUNDS, seen);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aLaterCommitOfAnOlderVersionNeverLeaksIntoVersionsBuiltOnTheFirst() {
    InMemoryStorage storage = new InMemoryStorage();
    StoreOptions options = StoreOptions.defaults();
    try (VersionedStore first =
            VersionedStore.builder("a", storage)
                .localDir(tmp.resolve("x"))
                .options(options)
                .memoryBudget(budget)
                .open();
        VersionedStore zombie =
            VersionedStore.builder("z", storage)
                .localDir(tmp.resolve("y"))
                .options(options)
                .memoryBudget(budget)
                .open()) {
      try (StateTransaction tx = first.begin(0)) {
        tx.put("default", bytes("k1"), bytes("first"));
        assertThat(tx.commit()).isEqualTo(1);
      }
      try (StateTransaction tx = first.begin(1)) {
        tx.put("default", bytes("k3"), bytes("first"));
        assertThat(tx.commit()).isEqualTo(2);
      }
      // The zombie commits version 1 after version 2 was built on the first commit of 1.
      try (StateTransaction tx = zombie.begin(0)) {
        tx.put("default", bytes("k1"), bytes("zombie"));
        tx.put("default", bytes("k2"), bytes("zombie"));
        assertThat(tx.commit()).isEqualTo(1);
      }
      try (VersionedStore reader =
          VersionedStore.builder("r", storage)
              .localDir(tmp.resolve("r"))
              .options(options)
              .memoryBudget(budget)
              .open()) {
        try (StateTransaction tx = reader.begin(2)) {
          assertThat(EngineFixture.contents(tx))
              .containsExactly(Map.entry("k1", "first"), Map.entry("k3", "first"));
        }
        // Version 1 alone: one commit of it whole, never a mix of the two.
        try (StateTransaction tx = reader.begin(1)) {
          assertThat(EngineFixture.contents(tx))
              .isIn(Map.of("k1", "first"), Map.of("k1", "zombie", "k2", "zombie"));
        }
      }
    }
  }

  @Test
  void aBatchRerunAfterItsStateCommittedSucceedsWithDifferentContentAndTheRerunWins()
      throws Exception {
    // docs/decisions.md item 11: Spark re-runs a batch whose state committed when the task failed
    // later or the driver died before the commit log; the re-run's changes may differ in bytes
    // (order-dependent values). Its commit must succeed, and the next batch builds on it.
    long[] clock = {1_000};
    InMemoryStorage storage = new InMemoryStorage(() -> clock[0]);
    StoreOptions options = StoreOptions.defaults();
    try (VersionedStore run1 =
        VersionedStore.builder("a", storage)
            .localDir(tmp.resolve("x"))
            .options(options)
            .memoryBudget(budget)
            .open()) {
      try (StateTransaction tx = run1.begin(0)) {
        tx.put("default", bytes("sum"), bytes("0.30000000000000004"));
        tx.commit();
      }
    }
    clock[0] += 1_000;
    try (VersionedStore run2 =
        VersionedStore.builder("a", storage)
            .localDir(tmp.resolve("y"))
            .options(options)
            .memoryBudget(budget)
            .open()) {
      try (StateTransaction tx = run2.begin(0)) {
        tx.put("default", bytes("sum"), bytes("0.3"));
        assertThat(tx.commit()).isEqualTo(1);
      }
      clock[0] += 1_000;
      try (StateTransaction tx = run2.begin(1)) {
        tx.put("default", bytes("n"), bytes("2"));
        assertThat(tx.commit()).isEqualTo(2);
      }
    }
    try (VersionedStore reader =
        VersionedStore.builder("r", storage)
            .localDir(tmp.resolve("r"))
            .options(options)
            .memoryBudget(budget)
            .open()) {
      try (StateTransaction tx = reader.begin(1)) {
        assertThat(EngineFixture.contents(tx)).containsExactly(Map.entry("sum", "0.3"));
      }
      try (StateTransaction tx = reader.begin(2)) {
        assertThat(EngineFixture.contents(tx))
            .containsExactly(Map.entry("n", "2"), Map.entry("sum", "0.3"));
      }
    }
  }
}
