package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.ProcessMetrics;
import io.streamstate.core.engine.ProcessMetrics.Metric;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.OptionalLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link ProcessMetrics}: the counters sum what every store of one process did, each event once
 * (checked against what the stores were made to do, and against the stores' own counters), and the
 * gauges read the process's budget, open instances and pending async uploads. Each test is a
 * process of its own ({@link ProcessResources}), so the counts start at zero.
 */
class ProcessMetricsTest {
  private static final long CAP = 40L << 20;
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path tmp;
  private ProcessResources resources;
  private ProcessMetrics metrics;
  private int instances;

  @BeforeEach
  void newProcess() {
    resources = new ProcessResources("metrics-test");
    metrics = ProcessMetrics.of(resources);
  }

  @AfterEach
  void endProcess() {
    resources.close();
  }

  private VersionedStore open(
      Storage storage,
      String prefix,
      StoreOptions options,
      RocksDbMemoryBudget budget,
      GroupCommitter committer) {
    return VersionedStore.builder("store " + prefix, storage)
        .prefix(prefix)
        .localDir(tmp.resolve("l" + (++instances)))
        .options(options)
        .resources(resources)
        .memoryBudget(budget)
        .groupCommitter(committer)
        .open();
  }

  private static void commit(VersionedStore store, long v) {
    try (StateTransaction tx = store.begin(v - 1)) {
      writeVersion(tx, v);
      tx.commit();
    }
  }

  @Test
  void countersSumEveryStoreOfTheProcessAndGaugesReadItsBudget() {
    RocksDbMemoryBudget budget = RocksDbMemoryBudget.shared(resources, CAP);
    assertThat(metrics.read(Metric.MEMORY_CAP_BYTES)).isEqualTo(CAP);
    InMemoryStorage durable = new InMemoryStorage();
    // No wait: each commit is a segment of its own, appended to the journal.
    GroupCommitter committer =
        new GroupCommitter(resources, durable, null, 0, 0, SegmentJournalSettings.defaults());
    VersionedStore a = open(durable, "a/", StoreOptions.defaults(), budget, committer);
    VersionedStore b = open(durable, "b/", StoreOptions.defaults(), budget, committer);
    try {
      for (long v = 1; v <= 3; v++) {
        commit(a, v);
        commit(b, v);
      }
      // Each store: version 0 loaded from durable storage (a fresh instance), then 2 warm loads.
      assertThat(metrics.read(Metric.COMMITS)).isEqualTo(6);
      assertThat(metrics.read(Metric.DURABLE_LOADS)).isEqualTo(2);
      assertThat(metrics.read(Metric.WARM_LOADS)).isEqualTo(4);
      assertThat(metrics.read(Metric.SEGMENT_COMMITS)).isEqualTo(6);
      assertThat(metrics.read(Metric.SEGMENTS_WRITTEN)).isEqualTo(committer.segmentsWritten());
      assertThat(metrics.read(Metric.JOURNAL_APPENDS)).isEqualTo(committer.journalAppends());
      assertThat(metrics.read(Metric.JOURNAL_APPENDS)).isPositive();
      assertThat(metrics.read(Metric.JOURNAL_APPEND_BYTES)).isPositive();
      assertThat(metrics.read(Metric.JOURNALS_CREATED)).isPositive();
      assertThat(metrics.read(Metric.JOURNAL_APPENDS_IN_FLIGHT)).isZero();
      assertThat(metrics.read(Metric.OPEN_INSTANCES)).isEqualTo(2);
      assertThat(metrics.read(Metric.MEMORY_USED_BYTES)).isPositive();
      assertThat(metrics.read(Metric.HEAP_MIRROR_CAP_BYTES))
          .isEqualTo(budget.heapMirrors().capBytes())
          .isPositive();
      assertThat(metrics.read(Metric.HEAP_MIRROR_BYTES))
          .as("two small stores, mirrored")
          .isEqualTo(budget.heapMirrors().usedBytes())
          .isPositive();
      assertThat(metrics.read(Metric.COMMITS))
          .as("the stores' own counts, summed")
          .isEqualTo(a.metrics().snapshot().commits() + b.metrics().snapshot().commits());

      // A new instance of a: its load replays the 3 versions from durable storage.
      a.close();
      a = open(durable, "a/", StoreOptions.defaults(), budget, committer);
      try (StateTransaction tx = a.begin(3, OptionalLong.empty())) {
        assertState(tx, 3);
      }
      assertThat(metrics.read(Metric.DURABLE_LOADS)).isEqualTo(3);
      assertThat(metrics.read(Metric.CHANGELOGS_REPLAYED)).isEqualTo(3);
      assertThat(metrics.read(Metric.OPEN_INSTANCES)).isEqualTo(2);
      assertThat(metrics.read(Metric.ASYNC_UPLOADS_PENDING)).isZero(); // sync
    } finally {
      a.close();
      b.close();
      assertThat(budget.heapMirrors().usedBytes())
          .as("closed stores give their mirrors back")
          .isZero();
      budget.close(); // the process's budget outlives its owner; this test's dies with it
    }
    assertThat(metrics.read(Metric.OPEN_INSTANCES)).isZero();
  }

  @Test
  void asyncLagGaugesFollowTheUploadsStillPending() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 5).build();
    Stall stall = storage.stall(CallKind.CREATE, n -> true);
    StoreOptions async = StoreOptions.defaults().withAsyncMaxLagVersions(3);
    VersionedStore a = open(storage, "a/", async, EngineFixture.BUDGET, null);
    VersionedStore b = open(storage, "b/", async, EngineFixture.BUDGET, null);
    try {
      for (long v = 1; v <= 3; v++) {
        commit(a, v); // returns although no upload can complete
      }
      commit(b, 1);
      assertThat(stall.awaitBlocked(2, WAIT)).isTrue(); // each store's first upload
      assertThat(metrics.read(Metric.ASYNC_UPLOADS_PENDING)).isEqualTo(4);
      assertThat(metrics.read(Metric.ASYNC_UPLOAD_LAG_VERSIONS)).isEqualTo(3);
      stall.release();
    } finally {
      a.close(); // a clean close waits for the uploads
      b.close();
    }
    assertThat(metrics.read(Metric.ASYNC_UPLOADS_PENDING)).isZero();
    assertThat(metrics.read(Metric.ASYNC_UPLOAD_LAG_VERSIONS)).isZero();
    assertThat(metrics.read(Metric.COMMITS)).isEqualTo(4);
  }
}
