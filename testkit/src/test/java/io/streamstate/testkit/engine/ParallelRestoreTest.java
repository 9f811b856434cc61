package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A load that restores a snapshot copies its SSTs side by side (the process's download pool), and
 * returns or fails only once every copy has ended. The copies' reads are held by the test until it
 * releases them, so "two copies were under way at once" is a fact, not a timing.
 */
class ParallelRestoreTest {
  private static final Duration WAIT = Duration.ofSeconds(30);

  /** Snapshots at 4 and 8, every SST shared (none inlined), changelogs 9 and 10 kept. */
  private static final StoreOptions OPTIONS =
      StoreOptions.defaults()
          .withSnapshotInterval(4)
          .withInlineSstMaxBytes(0)
          .withMinVersionsToRetain(2)
          .withTornFileGraceMillis(0);

  @TempDir Path tmp;
  private int instances;

  @Test
  void aRestoreCopiesItsSstsSideBySideAndLoadsTheExactState() throws Exception {
    InMemoryStorage durable = build();
    List<String> ssts = sstsOfSnapshot(durable, 8);
    assertThat(ssts).as("snapshot 8 has several SSTs to copy").hasSizeGreaterThanOrEqualTo(2);
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 5).build();
    Stall reads = storage.stall(CallKind.OPEN, ssts::contains);
    try (VersionedStore store = open(storage)) {
      CompletableFuture<Void> load =
          CompletableFuture.runAsync(
              () -> {
                try (StateTransaction tx = store.begin(10)) {
                  assertState(tx, 10);
                }
              });
      try {
        // One after another, the second read would start only after the first was released.
        assertThat(reads.awaitBlocked(2, WAIT)).as("two SST reads under way at once").isTrue();
        assertThat(load).isNotDone();
      } finally {
        reads.release(); // a failed assertion still lets the load, and the store's close, end
      }
      load.get(WAIT.toSeconds(), TimeUnit.SECONDS);
      assertThat(store.lastSnapshotVersion()).isEqualTo(8);
      assertThat(store.metrics().snapshot().durableLoads()).isEqualTo(1);
    }
  }

  @Test
  void aRestoreWithOneSstMissingFailsNamingItAfterEveryOtherCopyEnded() throws Exception {
    InMemoryStorage durable = build();
    assertThat(durable.names().stream().filter(n -> n.startsWith("snapshot/")))
        .as("no older snapshot to fall back to: the load fails when this restore does")
        .hasSize(1);
    List<String> ssts = sstsOfSnapshot(durable, 8);
    String missing = ssts.get(ssts.size() - 1);
    durable.delete(missing);
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 7).build();
    // The other copies are held: the failed load must wait for them before it deletes the copies.
    Stall others = storage.stall(CallKind.OPEN, n -> ssts.contains(n) && !n.equals(missing));
    try (VersionedStore store = open(storage)) {
      Path local = tmp.resolve("l" + instances);
      CompletableFuture<Void> load =
          CompletableFuture.runAsync(
              () -> {
                try (StateTransaction tx = store.begin(10)) {
                  assertState(tx, 10);
                }
              });
      try {
        assertThat(others.awaitBlocked(1, WAIT)).isTrue();
        assertThat(load).as("waits for the copies still under way").isNotDone();
      } finally {
        others.release();
      }
      assertThatThrownBy(() -> load.get(WAIT.toSeconds(), TimeUnit.SECONDS))
          .hasCauseInstanceOf(MissingFileException.class)
          .hasMessageContaining("Cannot load version 10")
          .hasMessageContaining(missing);
      assertThat(store.localVersion()).isEqualTo(-1);
      assertThat(sstFiles(local)).as("no copy of the failed restore is left behind").isEmpty();
    }
  }

  private static List<Path> sstFiles(Path dir) throws java.io.IOException {
    if (!Files.exists(dir)) {
      return List.of();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      return files.filter(p -> p.toString().endsWith(".sst")).toList();
    }
  }

  private InMemoryStorage build() {
    InMemoryStorage durable = new InMemoryStorage();
    try (VersionedStore store = open(durable)) {
      for (long v = 1; v <= 10; v++) {
        try (StateTransaction tx = store.begin(v - 1)) {
          writeVersion(tx, v);
          tx.commit();
        }
        store.maintain();
      }
    }
    return durable;
  }

  private VersionedStore open(io.streamstate.core.storage.Storage storage) {
    return VersionedStore.builder("op=0/part=1", storage)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(OPTIONS)
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  private static List<String> sstsOfSnapshot(InMemoryStorage durable, long v) {
    String prefix = "snapshot/" + String.format("%020d", v) + "-";
    String manifest =
        durable.names().stream().filter(n -> n.startsWith(prefix)).findFirst().orElseThrow();
    byte[] payload =
        FramedFile.unframe(durable.bytes(manifest), FileKind.SNAPSHOT_MANIFEST, manifest);
    List<String> names = SnapshotManifest.decode(payload, manifest).sharedNames();
    assertThat(names).allMatch(n -> n.startsWith(StoreLayout.SST_DIR));
    return names;
  }
}
