package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsLateWriteReports;
import io.streamstate.testkit.FaultInjectingStorage;
import io.streamstate.testkit.FaultInjectingStorage.CallKind;
import io.streamstate.testkit.FaultInjectingStorage.Stall;
import io.streamstate.testkit.InMemoryStorage;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Segment journals on a storage that takes reports of late writes ({@link
 * SupportsLateWriteReports}), as HDFS does through its DataNode pipelines: a hedged append is
 * reported before its hedge starts, later commits go to a journal created after the report (never
 * to a standby made before it, which may sit on the same slow DataNodes), and a journal the storage
 * suspects is rolled away from, without making a new journal at every commit when nothing better
 * can be made.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SegmentJournalSlowPipelineTest {
  private static final long FOREVER = TimeUnit.HOURS.toMillis(1);
  private static final Duration WAIT = Duration.ofSeconds(30);

  @TempDir Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private StoreGroup group;

  @BeforeEach
  void makeGroup() {
    group = new StoreGroup(tmp, pool, 2);
  }

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  @Test
  void aHedgedAppendIsReportedAndLaterCommitsGoToAJournalCreatedAfterTheReport() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage faulty = FaultInjectingStorage.builder(durable, 5).build();
    SlowPipelines storage = new SlowPipelines(faulty);
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            storage,
            hedgerAfterOneSecond(),
            FOREVER,
            FOREVER,
            SegmentJournalSettings.defaults());
    List<VersionedStore> stores = group.openAll(storage, StoreOptions.defaults(), committer);
    Stall stall = null;
    try {
      group.commitTogether(stores, 1);
      String first = journalOf(listed(durable).get(1L).get(0));
      awaitJournals(storage, 2); // the standby, created before anything is late
      String standby = storage.created.get(1);

      stall = faulty.stall(CallKind.APPEND, n -> n.equals(first)); // its pipeline is slow
      group.commitTogether(stores, 2); // hedged by a segment file while the append stalls
      assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
      assertThat(storage.reports).containsExactly(first);

      group.commitTogether(stores, 3);
      String third = journalOf(listed(durable).get(3L).get(0));
      assertThat(third).isNotIn(first, standby);
      assertThat(storage.createdAfterReport(third)).isTrue();
      group.commitTogether(stores, 4);
      assertThat(journalOf(listed(durable).get(4L).get(0))).isEqualTo(third);
    } finally {
      if (stall != null) {
        stall.release();
      }
      stores.forEach(VersionedStore::close);
    }
    group.assertEveryStoreLoads(durable, 4);
  }

  @Test
  void anAppendHedgedWhileItWaitsForAStandbyWhoseStartIsHeldReportsThatStandby() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage faulty = FaultInjectingStorage.builder(durable, 6).build();
    SlowPipelines storage = new SlowPipelines(faulty);
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            storage,
            hedgerAfterOneSecond(),
            FOREVER,
            FOREVER,
            SegmentJournalSettings.defaults());
    List<VersionedStore> stores = group.openAll(storage, StoreOptions.defaults(), committer);
    Stall stall = null;
    try {
      group.commitTogether(stores, 1);
      awaitJournals(storage, 2); // the current journal and its standby
      // Both become suspect (a write through their pipelines was late elsewhere), and the next
      // journal's start (its header's sync) is held: the next commit waits for it (a restart's
      // standby on a pipeline that turned slow, in the issue-15 benchmark).
      int next = storage.created.size();
      stall = faulty.stall(CallKind.APPEND, n -> storage.created.indexOf(n) == next);
      storage.reportLateWrite("elsewhere");

      group.commitTogether(stores, 2); // its hedge, a segment file, rescues it
      assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
      String held = storage.created.get(next);
      assertThat(storage.reports)
          .as("the journal whose start the hedged append waited for is reported")
          .contains(held);
      assertThat(listed(durable).get(2L)).allMatch(name -> !name.contains(".journal@"));
    } finally {
      if (stall != null) {
        stall.release();
      }
      stores.forEach(VersionedStore::close);
    }
    group.assertEveryStoreLoads(durable, 2);
  }

  @Test
  void twoGroupCommitsBehindOneStalledJournalAppendBothReturnThroughTheirHedges() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage faulty = FaultInjectingStorage.builder(durable, 8).build();
    SlowPipelines storage = new SlowPipelines(faulty);
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            storage,
            hedgerAfterOneSecond(),
            FOREVER,
            FOREVER,
            SegmentJournalSettings.defaults());
    StoreGroup four = new StoreGroup(tmp, pool, 4);
    List<VersionedStore> stores = four.openAll(storage, StoreOptions.defaults(), committer);
    List<VersionedStore> early = stores.subList(0, 2);
    List<VersionedStore> ahead = stores.subList(2, 4);
    Stall stall = null;
    try {
      four.commitTogether(stores, 1);
      four.commitTogether(ahead, 2);
      String first = journalOf(listed(durable).get(1L).get(0));

      // Two groups (versions 2 and 3) append to the same journal at once; its pipeline stalls.
      // The first append holds the file, the second waits behind it: each must be rescued by its
      // own hedge, never by the other's, and neither may wait for the stall to end.
      stall = faulty.stall(CallKind.APPEND, n -> n.equals(first));
      List<java.util.concurrent.Future<Long>> versionTwo = four.startTogether(early, 2);
      List<java.util.concurrent.Future<Long>> versionThree = four.startTogether(ahead, 3);
      for (java.util.concurrent.Future<Long> f : versionTwo) {
        assertThat(f.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(2);
      }
      for (java.util.concurrent.Future<Long> f : versionThree) {
        assertThat(f.get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(3);
      }
      assertThat(stall.blockedCalls()).as("appends still held by the stall").isPositive();
      assertThat(storage.reports).contains(first);

      four.commitTogether(early, 3);
      assertThat(journalOf(listed(durable).get(3L).get(0))).isNotEqualTo(first);
    } finally {
      if (stall != null) {
        stall.release();
      }
      stores.forEach(VersionedStore::close);
    }
    four.assertEveryStoreLoads(durable, 3);
  }

  @Test
  void aJournalTheStorageSuspectsIsRolledAwayFrom() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    SlowPipelines storage = new SlowPipelines(FaultInjectingStorage.builder(durable, 6).build());
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            storage,
            null,
            FOREVER,
            FOREVER,
            SegmentJournalSettings.defaults());
    List<VersionedStore> stores = group.openAll(storage, StoreOptions.defaults(), committer);
    try {
      group.commitTogether(stores, 1);
      String first = journalOf(listed(durable).get(1L).get(0));
      awaitJournals(storage, 2);

      // Another write, late on the same DataNodes, made every journal so far suspect.
      storage.reportLateWrite("elsewhere");
      group.commitTogether(stores, 2);
      String second = journalOf(listed(durable).get(2L).get(0));
      assertThat(second).isNotEqualTo(first);
      assertThat(storage.createdAfterReport(second)).isTrue();
      group.commitTogether(stores, 3);
      assertThat(journalOf(listed(durable).get(3L).get(0))).isEqualTo(second);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    group.assertEveryStoreLoads(durable, 3);
  }

  @Test
  void whenEveryNewJournalIsSuspectedTooOneIsKeptInsteadOfANewOneEachCommit() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    SlowPipelines storage = new SlowPipelines(FaultInjectingStorage.builder(durable, 7).build());
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            storage,
            null,
            FOREVER,
            FOREVER,
            SegmentJournalSettings.defaults());
    List<VersionedStore> stores = group.openAll(storage, StoreOptions.defaults(), committer);
    try {
      group.commitTogether(stores, 1);
      storage.suspectEverything = true; // no DataNode left to place a journal on
      group.commitTogether(stores, 2);
      String second = journalOf(listed(durable).get(2L).get(0));
      int journals = storage.created.size();
      for (long v = 3; v <= 6; v++) {
        group.commitTogether(stores, v);
        assertThat(journalOf(listed(durable).get(v).get(0))).isEqualTo(second);
      }
      assertThat(storage.created.size()).isLessThanOrEqualTo(journals + 1); // a standby at most
    } finally {
      stores.forEach(VersionedStore::close);
    }
    group.assertEveryStoreLoads(durable, 6);
  }

  private HedgedWriter hedgerAfterOneSecond() {
    return new HedgedWriter(
        HedgePolicy.builder()
            .floor(Duration.ofSeconds(1))
            .initialDeadline(Duration.ofSeconds(1))
            .minSamples(256)
            .build(),
        pool);
  }

  private static void awaitJournals(SlowPipelines storage, int count) throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (storage.created.size() < count) {
      assertThat(System.nanoTime()).as("waiting for the standby journal").isLessThan(deadline);
      Thread.sleep(10);
    }
  }

  /** What a new process finds: each version's records and segment files, by name. */
  private static TreeMap<Long, List<String>> listed(InMemoryStorage durable) {
    Storage fresh = FaultInjectingStorage.builder(durable, 97).build();
    TreeMap<Long, List<String>> byVersion = new TreeMap<>();
    for (Map.Entry<Long, List<SegmentCatalog.SegmentFile>> e :
        SegmentCatalog.of(ProcessResources.shared(), fresh).list().entrySet()) {
      byVersion.put(e.getKey(), e.getValue().stream().map(f -> f.name().name()).toList());
    }
    return byVersion;
  }

  private static String journalOf(String record) {
    return record.substring(0, record.indexOf(".journal@") + ".journal".length());
  }

  /**
   * A storage whose files are written through pipelines as on HDFS, in the simplest model: a late
   * write makes every journal created before it suspect (its pipeline may hold the slow DataNode),
   * and journals created after it are placed elsewhere (or, with {@link #suspectEverything}, not).
   */
  private static final class SlowPipelines
      implements Storage, SupportsAppend, SupportsLateWriteReports {
    private final FaultInjectingStorage delegate;
    final List<String> created = new CopyOnWriteArrayList<>();
    final List<String> reports = new CopyOnWriteArrayList<>();
    private final Set<String> suspected = ConcurrentHashMap.newKeySet();
    private volatile int createdAtLastReport = -1;
    volatile boolean suspectEverything;

    SlowPipelines(FaultInjectingStorage delegate) {
      this.delegate = delegate;
    }

    boolean createdAfterReport(String name) {
      return created.indexOf(name) >= createdAtLastReport;
    }

    @Override
    public synchronized void reportLateWrite(String name) {
      if (!name.equals("elsewhere")) {
        reports.add(name);
      }
      suspected.addAll(created);
      createdAtLastReport = created.size();
    }

    @Override
    public boolean isSuspectedSlow(String name) {
      return suspectEverything || suspected.contains(name);
    }

    @Override
    public synchronized AppendableFile createAppendable(String name) {
      AppendableFile file = delegate.createAppendable(name);
      created.add(name);
      return file;
    }

    @Override
    public boolean appendSupported() {
      return delegate.appendSupported();
    }

    @Override
    public void fence(String name) {
      delegate.fence(name);
    }

    @Override
    public void create(String name, ContentWriter content) {
      delegate.create(name, content);
    }

    @Override
    public InputStream open(String name) {
      return delegate.open(name);
    }

    @Override
    public boolean delete(String name) {
      return delegate.delete(name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      return new ArrayList<>(delegate.list(prefix));
    }

    @Override
    public String describe() {
      return delegate.describe();
    }
  }
}
