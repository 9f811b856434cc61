package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StorageClock;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.OptionalLong;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A sweeper whose clock is skewed by twice the grace period against the storage's (I14): files
 * still being written (a segment not yet complete, an SST uploaded by a snapshot whose manifest is
 * not yet published) are never deleted however far its clock is ahead, and abandoned ones still go
 * once the grace period has passed in storage time however far it is behind. The storage stamps
 * files with its own clock ({@link InMemoryStorage}'s), the sweeper reads the real clock, as an
 * executor on another host would; storage time moves only when the test moves it. The skew itself
 * is measured and reported.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class ClockSkewRetentionTest {
  /** Long enough that the real time this test takes never counts. */
  private static final long GRACE = TimeUnit.MINUTES.toMillis(10);

  @TempDir Path tmp;

  /** Storage time minus the sweeper's wall clock. */
  private final AtomicLong storageAhead = new AtomicLong();

  /** Time the test let pass, on every clock alike, on top of the real time. */
  private final AtomicLong passed = new AtomicLong();

  private final InMemoryStorage durable =
      new InMemoryStorage(() -> System.currentTimeMillis() + passed.get() + storageAhead.get());
  private final ProcessResources sweeperProcess = new ProcessResources("skewed-sweeper");
  private int instances;

  @BeforeEach
  void skewTheSweepersClock() {
    StorageClock.useClocks(
        sweeperProcess,
        () -> System.currentTimeMillis() + passed.get(),
        () -> System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(passed.get()));
  }

  @AfterEach
  void closeProcess() {
    sweeperProcess.close();
  }

  private static StoreOptions options() {
    return StoreOptions.defaults()
        .withMinVersionsToRetain(3)
        .withSnapshotInterval(2)
        .withTornFileGraceMillis(GRACE)
        .withInlineSstMaxBytes(0);
  }

  private VersionedStore openInSweeperProcess(Storage storage) {
    return VersionedStore.builder("op=0/part=0", storage)
        .prefix("0/0/")
        .localDir(tmp.resolve("l" + (++instances)))
        .options(options())
        .memoryBudget(EngineFixture.BUDGET)
        .resources(sweeperProcess)
        .open();
  }

  private static void commit(VersionedStore store, long v) {
    try (StateTransaction tx = store.begin(v - 1)) {
      writeVersion(tx, v);
      assertThat(tx.commit()).isEqualTo(v);
    }
  }

  /** Version {@code v} loads, with its exact state, in a new process. */
  private void assertLoads(long v) {
    Storage fresh = FaultInjectingStorage.builder(durable, 99).build();
    try (VersionedStore store =
            VersionedStore.builder("op=0/part=0", fresh)
                .prefix("0/0/")
                .localDir(tmp.resolve("l" + (++instances)))
                .options(options())
                .memoryBudget(EngineFixture.BUDGET)
                .open();
        StateTransaction tx = store.begin(v)) {
      assertState(tx, v);
    }
  }

  private void assertSkewMeasured(Storage storage, long skew) {
    OptionalLong measured = StorageClock.of(sweeperProcess, storage).lastWallSkewMillis();
    assertThat(measured).isPresent();
    assertThat(measured.getAsLong()).isBetween(skew - GRACE / 10, skew + GRACE / 10);
  }

  @ParameterizedTest(name = "sweeper clock {0} x grace against storage")
  @ValueSource(ints = {2, -2})
  void keepsASegmentBeingWrittenAndSweepsItOnceOldInStorageTime(int gracesAhead) {
    storageAhead.set(-gracesAhead * GRACE);
    // A segment still being written: visible, not yet verifying (HDFS shows files being written).
    String inFlight = SegmentCatalog.name(1, 0x5eed);
    durable.create(
        inFlight, ContentWriter.ofBytes("half a segment".getBytes(StandardCharsets.UTF_8)));
    SegmentSweep sweep = SegmentSweep.of(sweeperProcess, durable);

    sweep.sweep(options());
    assertThat(durable.names()).contains(inFlight);
    assertSkewMeasured(durable, storageAhead.get());

    // Its writer crashed: once the grace period has surely passed in storage time (whole-second
    // store
    // times count from the end of their second), it goes.
    passed.addAndGet(GRACE + FileInfo.TIMESTAMP_GRANULARITY_MILLIS);
    assertThat(sweep.sweep(options())).isEqualTo(1);
    assertThat(durable.names()).doesNotContain(inFlight);
  }

  @ParameterizedTest(name = "sweeper clock {0} x grace against storage")
  @ValueSource(ints = {2, -2})
  void keepsAnSstUploadedForASnapshotInFlightAndEveryRetainedVersion(int gracesAhead)
      throws Exception {
    storageAhead.set(-gracesAhead * GRACE);
    // Another instance's snapshot has uploaded this SST and not yet published its manifest.
    String inFlight = "0/0/sst/" + "ab".repeat(32) + "-7.sst";
    durable.create(inFlight, ContentWriter.ofBytes("an sst".getBytes(StandardCharsets.UTF_8)));
    int deleted = 0;
    long v = 0;
    try (VersionedStore store = openInSweeperProcess(durable)) {
      while (v < 12) {
        commit(store, ++v);
        deleted += store.maintain().filesDeleted();
        assertThat(durable.names()).contains(inFlight);
      }
      assertThat(deleted).as("retention deleted changelogs and snapshots").isPositive();
      assertSkewMeasured(durable, storageAhead.get());
      for (long kept = v - options().minVersionsToRetain() + 1; kept <= v; kept++) {
        assertLoads(kept);
      }

      // The snapshot never published: in storage time the grace period passes, and it goes.
      passed.addAndGet(GRACE + FileInfo.TIMESTAMP_GRANULARITY_MILLIS);
      while (durable.names().contains(inFlight) && v < 24) {
        commit(store, ++v);
        store.maintain();
      }
      assertThat(durable.names()).doesNotContain(inFlight);
    }
    for (long kept = v - options().minVersionsToRetain() + 1; kept <= v; kept++) {
      assertLoads(kept);
    }
  }
}
