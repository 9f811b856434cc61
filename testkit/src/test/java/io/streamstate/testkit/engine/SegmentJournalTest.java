package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.assertState;
import static io.streamstate.testkit.engine.EngineFixture.writeVersion;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.engine.segment.SegmentCatalog;
import io.streamstate.core.engine.segment.SegmentJournalSettings;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.SegmentJournalFile;
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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Group commit into a segment journal: each group commit is one append (and sync) to a journal file
 * the process keeps open, instead of a new segment file. Members are durable when they return, read
 * back exactly (in new processes, also while the journal is still being appended to), fail as a
 * changelog would, never follow a failed or torn append in the same journal, are hedged by a
 * segment file when an append stalls, and journals are swept whole once no store needs any record
 * in them and no writer can still append.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class SegmentJournalTest {
  private static final long FOREVER = TimeUnit.HOURS.toMillis(1);
  private static final Duration WAIT = Duration.ofSeconds(30);
  private static final int STORES = 4;
  private static final SegmentJournalSettings JOURNAL = SegmentJournalSettings.defaults();

  @TempDir Path tmp;
  private final ExecutorService pool = Executors.newCachedThreadPool();
  private StoreGroup group;

  @org.junit.jupiter.api.BeforeEach
  void makeGroup() {
    group = new StoreGroup(tmp, pool, STORES);
  }

  @AfterEach
  void stopPool() {
    pool.shutdownNow();
  }

  private VersionedStore open(
      Storage storage, int store, StoreOptions options, GroupCommitter committer) {
    return group.open(storage, store, options, committer);
  }

  private List<VersionedStore> openAll(
      Storage storage, StoreOptions options, GroupCommitter committer) {
    List<VersionedStore> stores = new ArrayList<>();
    for (int i = 0; i < STORES; i++) {
      stores.add(open(storage, i, options, committer));
    }
    return stores;
  }

  private static GroupCommitter journaled(Storage storage, HedgedWriter hedger) {
    return new GroupCommitter(
        ProcessResources.shared(), storage, hedger, FOREVER, FOREVER, JOURNAL);
  }

  private void commitTogether(List<VersionedStore> stores, long v) throws Exception {
    group.commitTogether(stores, v);
  }

  private List<Future<Long>> startTogether(List<VersionedStore> stores, long v) {
    return group.startTogether(stores, v);
  }

  private static void assertEveryMemberFailed(
      List<Future<Long>> outcomes, Class<? extends Throwable> type) {
    StoreGroup.assertEveryMemberFailed(outcomes, type);
  }

  private static List<String> journals(InMemoryStorage durable) {
    return durable.names().stream().filter(n -> n.endsWith(".journal")).toList();
  }

  private static List<String> segmentFiles(InMemoryStorage durable) {
    return durable.names().stream().filter(n -> n.endsWith(".segment")).toList();
  }

  /** What a new process finds: each version's records and segment files, by name. */
  private static TreeMap<Long, List<String>> listedInNewProcess(InMemoryStorage durable) {
    Storage fresh = FaultInjectingStorage.builder(durable, 97).build();
    TreeMap<Long, List<String>> byVersion = new TreeMap<>();
    for (Map.Entry<Long, List<SegmentCatalog.SegmentFile>> e :
        SegmentCatalog.of(ProcessResources.shared(), fresh).list().entrySet()) {
      byVersion.put(e.getKey(), e.getValue().stream().map(f -> f.name().name()).toList());
    }
    return byVersion;
  }

  /** The journal a record name lies in. */
  private static String journalOf(String record) {
    return record.substring(0, record.indexOf(".journal@") + ".journal".length());
  }

  private void assertEveryStoreLoads(InMemoryStorage durable, long v) {
    group.assertEveryStoreLoads(durable, v);
  }

  /** A hedger whose deadline is a second: hedges fire for stalls, not for ordinary appends. */
  private HedgedWriter hedgerAfterOneSecond() {
    return new HedgedWriter(
        HedgePolicy.builder()
            .floor(Duration.ofSeconds(1))
            .initialDeadline(Duration.ofSeconds(1))
            .minSamples(256)
            .build(),
        pool);
  }

  @Test
  void groupCommitsAreAppendsToOneJournalAndLoadBackExactlyInANewProcess() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    GroupCommitter committer = journaled(durable, null);
    assertThat(committer.appendsToJournal()).isTrue();
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), committer);
    try {
      for (long v = 1; v <= 5; v++) {
        commitTogether(stores, v);
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertThat(committer.segmentsWritten()).isEqualTo(5);
    assertThat(committer.journalAppends()).isEqualTo(5);
    assertThat(segmentFiles(durable)).isEmpty();
    // The journal that took the appends, and at most the standby made for the next switch.
    assertThat(journals(durable)).hasSizeBetween(1, 2);
    TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
    assertThat(listed.keySet()).containsExactly(1L, 2L, 3L, 4L, 5L);
    assertThat(listed.values().stream().map(l -> journalOf(l.get(0))).distinct()).hasSize(1);
    for (long v = 1; v <= 5; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }

  @Test
  void aReaderInAnotherProcessReadsOnAsTheJournalGrows() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    Storage reader = FaultInjectingStorage.builder(durable, 3).build(); // one reading process
    List<VersionedStore> stores =
        openAll(durable, StoreOptions.defaults(), journaled(durable, null));
    try {
      commitTogether(stores, 1);
      commitTogether(stores, 2);
      try (VersionedStore r = open(reader, 0, StoreOptions.defaults(), null);
          StateTransaction tx = r.begin(2)) {
        assertState(tx, 2);
      }
      commitTogether(stores, 3);
      // Same reading process, same catalog: it reads the journal on from where it stopped.
      try (VersionedStore r = open(reader, 0, StoreOptions.defaults(), null);
          StateTransaction tx = r.begin(3)) {
        assertState(tx, 3);
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
  }

  @Test
  void aFailedAppendFailsEveryMemberAndTheRetryGoesToAnotherJournal() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 5).build();
    List<VersionedStore> stores =
        openAll(storage, StoreOptions.defaults(), journaled(storage, null));
    try {
      commitTogether(stores, 1);
      String first = journalOf(listedInNewProcess(durable).get(1L).get(0));
      int lengthAfterOne = durable.bytes(first).length;
      storage.failBefore(CallKind.APPEND, first); // version 2's append fails, writing nothing
      assertEveryMemberFailed(startTogether(stores, 2), RetryableException.class);
      commitTogether(stores, 2); // the tasks retry
      commitTogether(stores, 3);
      // Nothing was ever appended to the journal after its failure.
      assertThat(durable.bytes(first)).hasSize(lengthAfterOne);
      TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
      assertThat(journalOf(listed.get(2L).get(0))).isNotEqualTo(first);
      assertThat(listed.get(2L)).hasSize(1);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertEveryStoreLoads(durable, 3);
  }

  @Test
  void aTornAppendIsSkippedByReadersAndNothingFollowsItInItsJournal() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 7).build();
    List<VersionedStore> stores =
        openAll(storage, StoreOptions.defaults(), journaled(storage, null));
    try {
      commitTogether(stores, 1);
      String first = journalOf(listedInNewProcess(durable).get(1L).get(0));
      // The writer dies half way through version 2's append (as seen by readers).
      storage.tearAppend(n -> n.equals(first));
      assertEveryMemberFailed(startTogether(stores, 2), OutcomeUnknownException.class);
      int tornLength = durable.bytes(first).length;

      Storage fresh = FaultInjectingStorage.builder(durable, 98).build();
      try (VersionedStore store = open(fresh, 0, StoreOptions.defaults(), null)) {
        assertThatThrownBy(() -> store.begin(2))
            .isInstanceOf(StreamStateException.class)
            .hasMessageContaining("version 2");
        try (StateTransaction tx = store.begin(1)) {
          assertState(tx, 1);
        }
      }
      // The outcome was unknown and the version is not there: the tasks run it again.
      commitTogether(stores, 2);
      assertThat(durable.bytes(first)).hasSize(tornLength);
      assertThat(journalOf(listedInNewProcess(durable).get(2L).get(0))).isNotEqualTo(first);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertEveryStoreLoads(durable, 2);
  }

  @Test
  void aRecordDamagedInTheMiddleOfAJournalIsAnErrorNamingItNotItsEnd() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores =
        openAll(durable, StoreOptions.defaults(), journaled(durable, null));
    try {
      for (long v = 1; v <= 3; v++) {
        commitTogether(stores, v);
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
    String record = listedInNewProcess(durable).get(2L).get(0);
    String journal = journalOf(record);
    assertThat(journalOf(listedInNewProcess(durable).get(3L).get(0))).isEqualTo(journal);
    int offset = Integer.parseInt(record.substring(record.lastIndexOf('@') + 1));
    String last = listedInNewProcess(durable).get(3L).get(0);
    byte[] whole = durable.bytes(journal);
    // A bit flipped in version 2's record header, then one in its segment index: either way a
    // complete record (version 3's) follows, so this is damage, not a torn last append.
    int[] flips = {
      offset + 2, offset + SegmentJournalFile.RECORD_HEADER_LENGTH + FramedFile.HEADER_LENGTH + 9
    };
    for (int at : flips) {
      byte[] damaged = whole.clone();
      damaged[at] ^= 0x10;
      durable.overwriteForTest(journal, damaged);
      assertThatThrownBy(() -> listedInNewProcess(durable))
          .as("bit flipped at %d", at)
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(journal)
          .hasMessageContaining("offset " + offset)
          .hasMessageContaining("damaged after it was written");
    }
    // The same damage in the journal's last record is its torn end: the versions before it load.
    byte[] lastDamaged = whole.clone();
    lastDamaged[Integer.parseInt(last.substring(last.lastIndexOf('@') + 1)) + 2] ^= 0x10;
    durable.overwriteForTest(journal, lastDamaged);
    assertThat(listedInNewProcess(durable).keySet()).containsExactly(1L, 2L);
    assertEveryStoreLoads(durable, 2);
  }

  @Test
  void aStalledAppendIsHedgedByASegmentFileAndLaterCommitsUseAnotherJournal() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 11).build();
    List<VersionedStore> stores =
        openAll(storage, StoreOptions.defaults(), journaled(storage, hedgerAfterOneSecond()));
    Stall stall = null;
    try {
      commitTogether(stores, 1);
      String first = journalOf(listedInNewProcess(durable).get(1L).get(0));
      stall = storage.stall(CallKind.APPEND, n -> n.equals(first)); // a slow DataNode
      commitTogether(stores, 2); // returns with the hedge while the append stalls
      assertThat(stall.awaitBlocked(1, WAIT)).isTrue();
      assertThat(segmentFiles(durable))
          .singleElement()
          .asString()
          .startsWith(String.format("_segments/%020d-", 2))
          .endsWith("-h.segment");
      commitTogether(stores, 3); // the stalled journal is retired: version 3 goes to the standby
      assertThat(stall.blockedCalls()).isEqualTo(1);
      TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
      assertThat(listed.get(3L)).singleElement().asString().doesNotStartWith(first);
      assertEveryStoreLoads(durable, 3);

      // The late append lands: a second, identical copy of version 2, harmless.
      stall.release();
      awaitRecords(durable, 2, 2);
      assertThat(segmentFiles(durable)).hasSize(1);
      commitTogether(stores, 4);
    } finally {
      if (stall != null) {
        stall.release();
      }
      stores.forEach(VersionedStore::close);
    }
    for (long v = 2; v <= 4; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }

  /** Waits until a new process lists {@code count} copies of {@code version}. */
  private static void awaitRecords(InMemoryStorage durable, long version, int count)
      throws InterruptedException {
    long deadline = System.nanoTime() + WAIT.toNanos();
    while (listedInNewProcess(durable).getOrDefault(version, List.of()).size() < count) {
      assertThat(System.nanoTime()).as("waiting for the late append").isLessThan(deadline);
      Thread.sleep(20);
    }
  }

  @Test
  void whenTheAppendAndItsHedgeBothStallTheCommitWaitsForTheFirstToComplete() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 13).build();
    GroupCommitter committer = journaled(storage, hedgerAfterOneSecond());
    try (VersionedStore store = open(storage, 0, StoreOptions.defaults(), committer)) {
      try (StateTransaction tx = store.begin(0)) {
        writeVersion(tx, 1);
        tx.commit();
      }
      Stall appends = storage.stall(CallKind.APPEND, n -> true);
      Stall hedges = storage.stall(CallKind.CREATE, n -> n.endsWith("-h.segment"));
      CompletableFuture<Long> commit =
          CompletableFuture.supplyAsync(
              () -> {
                try (StateTransaction tx = store.begin(1)) {
                  writeVersion(tx, 2);
                  return tx.commit();
                }
              },
              pool);
      assertThat(appends.awaitBlocked(1, WAIT)).isTrue();
      assertThat(hedges.awaitBlocked(1, WAIT)).isTrue();
      assertThat(commit).isNotDone();
      hedges.release(); // the hedge completes first and wins
      assertThat(commit.get(30, TimeUnit.SECONDS)).isEqualTo(2);
      appends.release();
    }
    try (VersionedStore store = open(durable, 0, StoreOptions.defaults(), null);
        StateTransaction tx = store.begin(2)) {
      assertState(tx, 2);
    }
  }

  @Test
  void aFailedAppendIsRetriedAsTheHedgeAndTheCommitSucceeds() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    FaultInjectingStorage storage = FaultInjectingStorage.builder(durable, 17).build();
    List<VersionedStore> stores =
        openAll(storage, StoreOptions.defaults(), journaled(storage, hedgerAfterOneSecond()));
    try {
      commitTogether(stores, 1);
      String first = journalOf(listedInNewProcess(durable).get(1L).get(0));
      storage.failAfter(CallKind.APPEND, first); // lands, but the writer hears an error
      commitTogether(stores, 2); // the hedge, started at once after the failure, succeeds
      assertThat(segmentFiles(durable)).singleElement().asString().endsWith("-h.segment");
      commitTogether(stores, 3);
      TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
      assertThat(listed.get(2L)).hasSize(2); // the record that landed and the hedge: same commit
      assertThat(journalOf(listed.get(3L).get(0))).isNotEqualTo(first);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    assertEveryStoreLoads(durable, 3);
  }

  @Test
  void aJournalRollsWhenFullAndAnOversizedSegmentGoesAloneIntoOne() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            durable,
            null,
            FOREVER,
            FOREVER,
            new SegmentJournalSettings(4096, FOREVER, 60_000));
    List<VersionedStore> stores = openAll(durable, StoreOptions.defaults(), committer);
    try {
      for (long v = 1; v <= 6; v++) {
        commitTogether(stores, v);
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
    TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
    assertThat(listed.keySet()).hasSize(6);
    Map<String, Long> recordsPerJournal = new TreeMap<>();
    listed.values().forEach(l -> recordsPerJournal.merge(journalOf(l.get(0)), 1L, Long::sum));
    assertThat(recordsPerJournal.size()).isGreaterThan(1);
    for (Map.Entry<String, Long> e : recordsPerJournal.entrySet()) {
      // Within the limit, or a single record that alone is larger.
      assertThat(durable.bytes(e.getKey()).length <= 4096 || e.getValue() == 1)
          .as(
              "%s holds %d records in %d bytes",
              e.getKey(), e.getValue(), durable.bytes(e.getKey()).length)
          .isTrue();
    }
    for (long v = 1; v <= 6; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }

  @Test
  void aJournalOfANewerFormatIsRefusedNamingItAndOneThatIsNotAJournalIsIgnored() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    List<VersionedStore> stores =
        openAll(durable, StoreOptions.defaults(), journaled(durable, null));
    try {
      commitTogether(stores, 1);
    } finally {
      stores.forEach(VersionedStore::close);
    }
    String stray = String.format("_segments/%020d-%016x.journal", 1L, 1L);
    durable.overwriteForTest(stray, "not a journal at all".getBytes());
    assertEveryStoreLoads(durable, 1);

    byte[] newer = SegmentJournalFile.header();
    newer[4] = 2;
    String future = String.format("_segments/%020d-%016x.journal", 2L, 2L);
    durable.overwriteForTest(future, newer);
    Storage fresh = FaultInjectingStorage.builder(durable, 96).build();
    try (VersionedStore store = open(fresh, 0, StoreOptions.defaults(), null)) {
      assertThatThrownBy(() -> store.begin(1))
          .isInstanceOf(UnsupportedException.class)
          .hasMessageContaining(future)
          .hasMessageContaining("format version 2");
    }
  }

  @Test
  void theSweepDeletesAJournalOnceNoStoreNeedsItsRecordsAndNoWriterCanAppend() throws Exception {
    InMemoryStorage durable = new InMemoryStorage();
    long rollMillis = 200;
    GroupCommitter committer =
        new GroupCommitter(
            ProcessResources.shared(),
            durable,
            null,
            FOREVER,
            FOREVER,
            new SegmentJournalSettings(1 << 20, rollMillis, 60_000));
    StoreOptions options =
        StoreOptions.defaults()
            .withMinVersionsToRetain(3)
            .withSnapshotInterval(2)
            .withTornFileGraceMillis(0);
    List<VersionedStore> stores = openAll(durable, options, committer);
    int versions = 12;
    try {
      for (long v = 1; v <= versions; v++) {
        commitTogether(stores, v);
        for (VersionedStore s : stores) {
          s.maintain(); // snapshots every 2 versions; at the end every store's base is 10
        }
        Thread.sleep(rollMillis / 4); // spread the versions over several journals
      }
    } finally {
      stores.forEach(VersionedStore::close);
    }
    // Wait until no writer may append to any journal there is (its close-by time has passed).
    long lastCloseBy =
        journals(durable).stream()
            .mapToLong(n -> Long.parseLong(n.substring("_segments/".length(), n.indexOf('-'))))
            .max()
            .orElseThrow();
    while (System.currentTimeMillis() <= lastCloseBy) {
      Thread.sleep(20);
    }
    TreeMap<Long, List<String>> listed = listedInNewProcess(durable);
    Map<String, Long> newestVersionIn = new TreeMap<>();
    journals(durable).forEach(j -> newestVersionIn.put(j, 0L));
    listed.forEach(
        (v, names) -> names.forEach(n -> newestVersionIn.merge(journalOf(n), v, Math::max)));
    List<String> needed =
        newestVersionIn.entrySet().stream()
            .filter(e -> e.getValue() > 10)
            .map(Map.Entry::getKey)
            .toList();
    assertThat(needed).isNotEmpty();
    assertThat(newestVersionIn).hasSizeGreaterThan(needed.size()); // some journals can go

    // Swept by another process (whose writer holds none of these journals open).
    Storage sweeper = FaultInjectingStorage.builder(durable, 95).build();
    SegmentSweep.of(ProcessResources.shared(), sweeper).sweep(options);

    assertThat(journals(durable)).containsExactlyInAnyOrderElementsOf(needed);
    for (long v = versions - options.minVersionsToRetain() + 1; v <= versions; v++) {
      assertEveryStoreLoads(durable, v);
    }
  }
}
