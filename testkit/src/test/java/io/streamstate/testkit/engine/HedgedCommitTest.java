package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Commits through a {@link HedgedWriter}: a stalled changelog write is hedged under the commit's
 * alternate name, the commit returns with the hedge, loads read the hedge copy, and the late
 * primary is removed, so exactly one copy of each commit remains.
 */
class HedgedCommitTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  @TempDir Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  private static HedgePolicy hedgeAtOnce() {
    return HedgePolicy.builder().floor(Duration.ZERO).initialDeadline(Duration.ZERO).build();
  }

  @Test
  void aStalledChangelogWriteIsHedgedAndTheVersionLoadsFromTheHedge() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 7).build();
    HedgedWriter hedger = new HedgedWriter(hedgeAtOnce(), pool);
    try (VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(tmp.resolve("w"))
            .options(StoreOptions.defaults())
            .memoryBudget(EngineFixture.BUDGET)
            .hedger(hedger)
            .open()) {
      for (long v = 1; v <= 3; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
      }
      // The primary name of version 4's changelog stalls (a slow datanode).
      Stall stall =
          storage.stall(
              CallKind.CREATE,
              n -> n.startsWith("changelog/00000000000000000004-") && !n.endsWith("-h.changelog"));
      long wonBefore = store.metrics().snapshot().hedgesWon();
      try (StateTransaction tx = store.begin(3)) {
        writeVersion(tx, 4);
        assertThat(tx.commit()).isEqualTo(4); // returns with the hedge while the primary stalls
      }
      assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
      assertThat(store.metrics().snapshot().hedgesWon() - wonBefore).isEqualTo(1);
      assertThat(changelogsOf(durable, 4)).singleElement().asString().endsWith("-h.changelog");

      // Another instance loads version 4 from the hedge copy alone.
      try (VersionedStore reader =
              VersionedStore.builder("r", durable)
                  .localDir(tmp.resolve("r"))
                  .options(StoreOptions.defaults())
                  .memoryBudget(EngineFixture.BUDGET)
                  .open();
          StateTransaction tx = reader.begin(4)) {
        assertState(tx, 4);
      }

      // The stalled primary completes late: it is deleted, one copy of the commit remains.
      stall.release();
      pool.shutdown();
      assertThat(pool.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
      assertThat(changelogsOf(durable, 4)).singleElement().asString().endsWith("-h.changelog");
      try (VersionedStore reader =
              VersionedStore.builder("r2", durable)
                  .localDir(tmp.resolve("r2"))
                  .options(StoreOptions.defaults())
                  .memoryBudget(EngineFixture.BUDGET)
                  .open();
          StateTransaction tx = reader.begin(4)) {
        assertState(tx, 4);
      }
    }
  }

  private static List<String> changelogsOf(InMemoryStorage durable, long version) {
    return durable.names().stream()
        .filter(n -> n.startsWith(String.format("changelog/%020d-", version)))
        .toList();
  }
}
