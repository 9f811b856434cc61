package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.RocksDbMemoryBudget;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two writers committing the same version (a task retry, a speculative duplicate, a zombie):
 * exactly one changelog wins, the other gets a conflict error, and a reader sees exactly the
 * winner's state, never a mix.
 */
class RacingWritersTest {
  private static final int ROUNDS = 100;
  @TempDir Path tmp;
  private static final RocksDbMemoryBudget budget = EngineFixture.BUDGET;

  @Test
  void exactlyOneOfTwoRacingWritersWinsOnLocalDisk() throws Exception {
    race(new LocalStorage(tmp.resolve("durable")));
  }

  @Test
  void exactlyOneOfTwoRacingWritersWinsInMemory() throws Exception {
    race(new InMemoryStorage());
  }

  private void race(Storage storage) throws Exception {
    StoreOptions options = StoreOptions.defaults();
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try (VersionedStore a =
            VersionedStore.open("a", storage, "", tmp.resolve("a"), options, budget);
        VersionedStore b =
            VersionedStore.open("b", storage, "", tmp.resolve("b"), options, budget);
        VersionedStore reader =
            VersionedStore.open("r", storage, "", tmp.resolve("r"), options, budget)) {
      int winsA = 0;
      for (int round = 0; round < ROUNDS; round++) {
        long v = round;
        CountDownLatch start = new CountDownLatch(1);
        List<Future<String>> results = new ArrayList<>();
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
                    try {
                      tx.commit();
                      return "won";
                    } catch (ConflictException e) {
                      assertThat(e)
                          .hasMessageContaining("Cannot commit version " + (v + 1))
                          .hasMessageContaining("another writer committed this version first");
                      return "lost";
                    }
                  }));
        }
        start.countDown();
        String ra = results.get(0).get();
        String rb = results.get(1).get();
        assertThat(List.of(ra, rb)).as("round %d", round).containsExactlyInAnyOrder("won", "lost");
        String winner = ra.equals("won") ? "a" : "b";
        winsA += ra.equals("won") ? 1 : 0;
        try (StateTransaction tx = reader.begin(v + 1)) {
          List<String> values = new ArrayList<>();
          tx.iterator("default")
              .forEachRemaining(kv -> values.add(new String(kv.value(), StandardCharsets.UTF_8)));
          assertThat(values).hasSize(200).containsOnly(winner + round);
        }
      }
      System.out.printf(
          "racing writers on %s: %d rounds, a won %d, b won %d%n",
          storage.describe(), ROUNDS, winsA, ROUNDS - winsA);
    } finally {
      pool.shutdownNow();
    }
  }

  @Test
  void aRetryWithIdenticalContentSucceedsIdempotently() {
    InMemoryStorage storage = new InMemoryStorage();
    StoreOptions options = StoreOptions.defaults();
    try (VersionedStore first =
            VersionedStore.open("a", storage, "", tmp.resolve("x"), options, budget);
        VersionedStore retry =
            VersionedStore.open("a", storage, "", tmp.resolve("y"), options, budget)) {
      try (StateTransaction tx = first.begin(0)) {
        tx.put("default", bytes("k"), bytes("v"));
        assertThat(tx.commit()).isEqualTo(1);
      }
      try (StateTransaction tx = retry.begin(0)) {
        tx.put("default", bytes("k"), bytes("v"));
        assertThat(tx.commit()).isEqualTo(1);
      }
      assertThat(retry.metrics().snapshot().idempotentCommits()).isEqualTo(1);
    }
  }
}
