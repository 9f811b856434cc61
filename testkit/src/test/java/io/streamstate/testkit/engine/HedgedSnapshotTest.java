package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.reference;
import static io.streamstate.testkit.engine.ForcedSnapshotTest.checkpointDirs;
import static io.streamstate.testkit.engine.ForcedSnapshotTest.commit;
import static io.streamstate.testkit.engine.ForcedSnapshotTest.withoutChangelogs;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SnapshotManifest;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Snapshot uploads through the store's {@link HedgedWriter}: a stalled SST or manifest create is
 * hedged under an attempt-unique name, the snapshot completes with the hedge copies while the
 * primaries are still blocked, and restores exactly. The late primaries are never deleted by the
 * hedger (an SST's content-addressed name may be shared); retention keeps every referenced file and
 * removes the unreferenced primary SST once it is older than the grace period.
 */
class HedgedSnapshotTest {
  private static final Duration WAIT = Duration.ofSeconds(30);
  @TempDir Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  /** Hedges at once, with budget for every write. */
  private static HedgePolicy hedgeAtOnce() {
    return HedgePolicy.builder()
        .floor(Duration.ZERO)
        .initialDeadline(Duration.ZERO)
        .budgetFraction(1)
        .budgetBurst(1000)
        .build();
  }

  private static boolean isPrimarySst(String n) {
    return n.startsWith("sst/") && !n.endsWith("-h.sst");
  }

  private static boolean isPrimaryManifest(String n) {
    return n.startsWith("snapshot/") && !n.endsWith("-h.snapshot");
  }

  @Test
  void stalledSnapshotPrimariesAreHedgedAndRetentionKeepsEveryReferencedFile() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 21).build();
    HedgedWriter hedger = new HedgedWriter(hedgeAtOnce(), pool);
    Path local = tmp.resolve("a");
    // Every SST a shared file; retention keeps 2 versions and leaves young unreferenced SSTs.
    StoreOptions options =
        StoreOptions.defaults()
            .withInlineSstMaxBytes(0)
            .withMinVersionsToRetain(2)
            .withSnapshotInterval(100)
            .withTornFileGraceMillis(600_000);
    String primarySst;
    // Versions 1 to 3 written unhedged, so that this test's hedger sees snapshot writes alone.
    try (VersionedStore writer =
        VersionedStore.builder("w", durable)
            .localDir(tmp.resolve("w"))
            .options(options)
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      commit(writer, 1, 3);
    }
    try (VersionedStore store =
        VersionedStore.builder("s", storage)
            .localDir(local)
            .options(options)
            .memoryBudget(EngineFixture.BUDGET)
            .hedger(hedger)
            .open()) {
      store.begin(3).close();
      Stall stall = storage.stall(CallKind.CREATE, n -> isPrimarySst(n) || isPrimaryManifest(n));

      // Returns while both primaries are blocked (the test releases them only afterwards).
      assertThat(ForcedSnapshotTest.returnsInTime(store::snapshotNow)).isEqualTo(3);
      assertThat(stall.awaitBlocked(2, WAIT)).as("the SST and manifest primaries").isTrue();

      List<String> manifests = names(durable, "snapshot/");
      assertThat(manifests).singleElement().asString().endsWith("-h.snapshot");
      StoreLayout.SnapshotName hedged = StoreLayout.parseSnapshot(manifests.get(0));
      assertThat(hedged.version()).isEqualTo(3);
      assertThat(hedged.hedge()).isTrue();
      SnapshotManifest manifest = readManifest(durable, manifests.get(0));
      assertThat(manifest.sharedNames()).isNotEmpty().allMatch(n -> n.endsWith("-h.sst"));
      assertThat(names(durable, "sst/"))
          .containsExactlyInAnyOrderElementsOf(manifest.sharedNames());
      assertThat(store.metrics().snapshot().snapshotHedgesFired())
          .isEqualTo(manifest.sharedNames().size() + 1L);
      assertThat(store.metrics().snapshot().snapshotHedgesWon())
          .isEqualTo(manifest.sharedNames().size() + 1L);
      // The stalled primary SST still reads from the local checkpoint, which is kept for it.
      assertThat(checkpointDirs(local)).hasSize(1);

      // A new process restores version 3 from the hedge copies alone, exactly.
      assertThat(restoredFromSnapshotsAlone(durable, 3, "r1")).isEqualTo(reference(3));

      // The primaries complete late. Neither is deleted by the hedger: the manifest is a complete
      // snapshot, the SST's content-addressed name may be shared. The checkpoint goes with them.
      stall.release();
      await()
          .atMost(WAIT)
          .until(
              () ->
                  hedger.companion().policy().metrics().snapshot().losersLeft() == 2
                      && checkpointDirs(local).isEmpty());
      HedgeMetrics.Snapshot hedges = hedger.companion().policy().metrics().snapshot();
      assertThat(hedger.policy().metrics().snapshot().writes())
          .as("snapshot files never reach the commits' hedger (its deadline and budget)")
          .isZero();
      assertThat(hedges.hedgesWon()).isEqualTo(hedges.hedgesFired());
      assertThat(hedges.losersCleaned()).isZero();
      assertThat(names(durable, "snapshot/")).hasSize(2);
      primarySst =
          names(durable, "sst/").stream()
              .filter(HedgedSnapshotTest::isPrimarySst)
              .findFirst()
              .get();
      FramedFile.verify(durable, primarySst, FileKind.SST);
      assertThat(manifest.sharedNames()).doesNotContain(primarySst);

      // More versions and a snapshot of version 6 (its creates race their hedges: any may win).
      commit(store, 4, 6);
      assertThat(store.snapshotNow()).isEqualTo(6);
      // Retention: base 3 (oldest version to keep 5). Every referenced file stays; the losing
      // primary SST is unreferenced but younger than the grace period: it stays too.
      store.applyRetention();
      assertEveryReferencedFileExists(durable);
      assertThat(durable.names()).contains(primarySst);
    }
    assertThat(restoredFromSnapshotsAlone(durable, 6, "r2")).isEqualTo(reference(6));
    assertThat(restoredFromSnapshotsAlone(durable, 3, "r3")).isEqualTo(reference(3));

    // An instance with no grace period, on the same lineage from version 3 to 6, runs retention:
    // the unreferenced primary SST goes, nothing referenced does.
    try (VersionedStore other =
        VersionedStore.builder("o", durable)
            .localDir(tmp.resolve("o"))
            .options(options.withTornFileGraceMillis(0))
            .memoryBudget(EngineFixture.BUDGET)
            .open()) {
      try (StateTransaction tx = other.begin(3)) {
        assertThat(EngineFixture.contents(tx)).isEqualTo(reference(3));
      }
      try (StateTransaction tx = other.begin(6)) {
        assertThat(EngineFixture.contents(tx)).isEqualTo(reference(6));
      }
      assertThat(other.applyRetention()).isPositive();
    }
    assertThat(durable.names()).doesNotContain(primarySst);
    assertEveryReferencedFileExists(durable);
    assertThat(restoredFromSnapshotsAlone(durable, 6, "r4")).isEqualTo(reference(6));
    assertThat(restoredFromSnapshotsAlone(durable, 3, "r5")).isEqualTo(reference(3));
  }

  @Test
  void withHedgingDisabledSnapshotsUseThePrimaryNamesOnly() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    HedgedWriter off = new HedgedWriter(HedgePolicy.builder().disable().build(), pool);
    try (VersionedStore store =
        VersionedStore.builder("s", durable)
            .localDir(tmp.resolve("a"))
            .options(StoreOptions.defaults().withInlineSstMaxBytes(0))
            .memoryBudget(EngineFixture.BUDGET)
            .hedger(off)
            .open()) {
      commit(store, 1, 3);
      assertThat(store.snapshotNow()).isEqualTo(3);
      assertThat(durable.names())
          .filteredOn(n -> !n.startsWith("changelog/"))
          .isNotEmpty()
          .allMatch(n -> isPrimarySst(n) || isPrimaryManifest(n));
      assertThat(store.metrics().snapshot().snapshotHedgesFired()).isZero();
    }
    assertThat(restoredFromSnapshotsAlone(durable, 3, "r")).isEqualTo(reference(3));
  }

  /** The state a new process restores at {@code version} with no changelog to help it. */
  private java.util.TreeMap<String, String> restoredFromSnapshotsAlone(
      InMemoryStorage durable, long version, String local) {
    try (VersionedStore fresh =
            VersionedStore.builder(local, withoutChangelogs(durable))
                .localDir(tmp.resolve(local))
                .options(StoreOptions.defaults())
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = fresh.begin(version)) {
      assertThat(fresh.metrics().snapshot().changelogsReplayed()).isZero();
      return EngineFixture.contents(tx);
    }
  }

  /** Every SST a verifying manifest references exists and verifies. */
  private static void assertEveryReferencedFileExists(InMemoryStorage durable) {
    List<String> referenced = new ArrayList<>();
    for (String m : names(durable, "snapshot/")) {
      referenced.addAll(readManifest(durable, m).sharedNames());
    }
    assertThat(referenced).isNotEmpty();
    for (String sst : referenced) {
      assertThat(durable.names()).as("referenced %s", sst).contains(sst);
      FramedFile.verify(durable, sst, FileKind.SST);
    }
  }

  private static SnapshotManifest readManifest(Storage storage, String name) {
    return SnapshotManifest.decode(
        FramedFile.readPayload(storage, name, FileKind.SNAPSHOT_MANIFEST), name);
  }

  private static List<String> names(InMemoryStorage durable, String prefix) {
    return durable.names().stream().filter(n -> n.startsWith(prefix)).sorted().toList();
  }
}
