package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.IntPredicate;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The live-key filter answers misses without RocksDB, so a key it wrongly rules out would read as
 * absent: every case here reads back every key it wrote, with the filter in place, and checks when
 * a filter exists at all (a fresh instance, after a full scan) and when it must not (restored
 * files, a partial scan, a scan that an apply overtook).
 */
class LiveKeyFilterTest {
  @TempDir Path tmp;
  private ProcessResources resources;
  private RocksDbMemoryBudget budget;

  @BeforeEach
  void setUp() {
    resources = new ProcessResources("test");
    // RocksDB's own reads: no heap mirror (HeapMirrorTest covers that path).
    budget = new RocksDbMemoryBudget(16L << 20, 0);
  }

  @AfterEach
  void tearDown() {
    budget.close();
    resources.close();
  }

  private LocalDb open(String dir) {
    return openAt(tmp.resolve(dir));
  }

  /**
   * An instance whose RocksDB writes run inside its applies: what is checked here (the filters a
   * write leaves, the rebuilds it starts) is then there when the apply returns.
   */
  private LocalDb openAt(Path dir) {
    LocalDb db =
        LocalDb.open("s", dir, budget, OpenDatabases.of(resources), LocalSpace.unmanaged("s", tmp));
    db.writeExecutor(Runnable::run);
    return db;
  }

  private static byte[] key(int i) {
    return ByteBuffer.allocate(12).putInt(3).putLong(i).array();
  }

  private static Changelog puts(long version, int from, int to, IntPredicate deleted) {
    List<Changelog.Change> changes = new ArrayList<>();
    for (int i = from; i < to; i++) {
      changes.add(new Changelog.Change(key(i), deleted.test(i) ? null : key(i)));
    }
    return LocalDbFixtures.ofDefaultFamily(version, changes);
  }

  /** Keys {@code [0, to)} read back: the live ones present, the others absent. */
  private static void assertReads(LocalDb db, int to, IntPredicate live) {
    for (int i = 0; i < to + 100; i++) {
      boolean expected = i < to && live.test(i);
      assertThat(db.exists(LocalDb.DEFAULT_FAMILY, key(i))).as("exists %d", i).isEqualTo(expected);
      assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(i)))
          .as("get %d", i)
          .isEqualTo(expected ? key(i) : null);
    }
  }

  private static void scanToEnd(LocalDb db) {
    try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
      while (c.isValid()) {
        c.key();
        c.next();
      }
    }
  }

  @Test
  void noKeyAddedIsRuledOutAndFewAbsentOnesPass() {
    LiveKeyFilter filter = LiveKeyFilter.withCapacity(100_000);
    Random random = new Random(7);
    List<byte[]> added = new ArrayList<>();
    for (int i = 0; i < 100_000; i++) {
      byte[] k = new byte[1 + random.nextInt(60)];
      random.nextBytes(k);
      added.add(k);
      filter.add(k);
    }
    for (byte[] k : added) {
      assertThat(filter.mightContain(k)).isTrue();
    }
    int falsePositives = 0;
    for (int i = 0; i < 100_000; i++) {
      if (filter.mightContain(key(i))) {
        falsePositives++;
      }
    }
    assertThat(falsePositives).as("false positives in 100,000").isLessThan(3_000);
    assertThat(filter.saturated()).isFalse();
  }

  @Test
  void aFreshInstanceFiltersFromTheStartAndKeepsEveryPut() {
    LocalDb db = open("fresh");
    try {
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      db.apply(puts(1, 0, 5_000, i -> false));
      db.apply(puts(2, 0, 5_000, i -> i % 4 == 0)); // deleted keys may stay in the filter
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertReads(db, 5_000, i -> i % 4 != 0);
    } finally {
      db.close();
    }
  }

  @Test
  void aFilterFilledFarPastItsRoomIsDroppedAndReadsStillFindEveryKey() {
    LocalDb db = open("full");
    try {
      db.apply(puts(1, 0, 60_000, i -> false)); // room for 16,384 keys
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      assertReads(db, 60_000, i -> true);
      scanToEnd(db);
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertReads(db, 60_000, i -> true);
    } finally {
      db.close();
    }
  }

  /**
   * A family no scan reads in full (the join's key-with-index store) gets a new filter from a
   * snapshot's scan in the background once its filter fills up: the snapshot's live keys (the keys
   * deleted before it dropped) and every key put while the scan ran.
   */
  @Test
  void aFilterFillingUpIsRebuiltFromASnapshotWithTheKeysPutMeanwhile() {
    LocalDb db = open("rebuilt");
    List<Runnable> background = new ArrayList<>();
    db.backgroundExecutor(background::add);
    try {
      db.apply(puts(1, 0, 20_000, i -> false)); // room for 16,384: not yet filling up
      assertThat(background).isEmpty();
      // 15,000 keys deleted (they stay in the filter), 10,000 more put: 30,000 added, filling up.
      db.apply(puts(2, 0, 30_000, i -> i < 15_000));
      assertThat(background).hasSize(1);
      db.apply(puts(3, 30_000, 32_000, i -> false)); // after the snapshot, before the scan ends
      background.remove(0).run();
      assertThat(mightContain(db, 0, 15_000))
          .as("deleted keys the old filter still holds")
          .isEqualTo(15_000);
      db.apply(puts(4, 32_000, 33_000, i -> false)); // takes the new filter
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertThat(mightContain(db, 0, 15_000))
          .as("deleted keys the new filter lets through")
          .isLessThan(750);
      assertReads(db, 33_000, i -> i >= 15_000);
      assertThat(background).as("no second rebuild yet").isEmpty();
    } finally {
      db.close();
    }
  }

  /**
   * A full scan builds a new filter only when the family's filter has taken more keys than it has
   * room for: one with room keeps answering (deleted keys stay in it), and hashing every key of a
   * large store each batch would cost its eviction scan a second or more.
   */
  @Test
  void aFullScanRebuildsTheFilterOnlyOnceItIsPastItsRoom() {
    LocalDb db = open("room");
    List<Runnable> background = new ArrayList<>();
    db.backgroundExecutor(background::add);
    try {
      db.apply(puts(1, 0, 10_000, i -> false)); // room for 16,384
      db.apply(puts(2, 0, 5_000, i -> true)); // deleted: they stay in the filter
      scanToEnd(db);
      assertThat(mightContain(db, 0, 5_000))
          .as("deleted keys after a scan of a filter with room: the same filter")
          .isEqualTo(5_000);
      assertReads(db, 10_000, i -> i >= 5_000);
      db.apply(puts(3, 10_000, 17_000, i -> false)); // 17,000 added: past its room
      assertThat(background).as("not yet filling up: no background rebuild").isEmpty();
      scanToEnd(db);
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertThat(mightContain(db, 0, 5_000))
          .as("deleted keys the scan's new filter lets through")
          .isLessThan(250);
      assertReads(db, 17_000, i -> i >= 5_000);
    } finally {
      db.close();
    }
  }

  /**
   * A full scan of a family whose files are larger than half the block cache reads past the cache:
   * every entry in order, and the cache no fuller than before (a scan that filled it would leave it
   * holding the family's last blocks, up to the whole cap).
   */
  @Test
  void aFullScanOfAFamilyLargerThanTheCacheReadsEveryEntryWithoutFillingIt() throws Exception {
    LocalDb db = open("large");
    Random random = new Random(11);
    try {
      List<Changelog.Change> changes = new ArrayList<>();
      Map<Integer, byte[]> values = new LinkedHashMap<>();
      for (int i = 0; i < 100_000; i++) {
        byte[] value = new byte[200]; // incompressible: about 20 MB of files, the cache is 16 MB
        random.nextBytes(value);
        values.put(i, value);
        changes.add(new Changelog.Change(key(i), value));
      }
      db.apply(LocalDbFixtures.ofDefaultFamily(1, changes));
      db.checkpoint(tmp.resolve("flushed")); // flushes the memtables into SST files
      long before = budget.usedBytes();
      int i = 0;
      try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
        for (; c.isValid(); c.next(), i++) {
          assertThat(c.key()).as("key %d", i).isEqualTo(key(i));
          assertThat(c.value()).as("value %d", i).isEqualTo(values.get(i));
        }
      }
      assertThat(i).isEqualTo(100_000);
      assertThat(budget.usedBytes() - before)
          .as("cache bytes the scan added (cap 16 MiB)")
          .isLessThan(2L << 20);
    } finally {
      db.close();
    }
  }

  /** A rebuild whose family is dropped, or whose instance closes, before it runs never scans. */
  @Test
  void aRebuildOfADroppedFamilyOrAClosedInstanceNeverScans() {
    LocalDb db = open("cancelled");
    List<Runnable> background = new ArrayList<>();
    db.backgroundExecutor(background::add);
    List<Changelog.Change> changes = new ArrayList<>();
    for (int i = 0; i < 30_000; i++) {
      changes.add(new Changelog.Change(key(i), key(i)));
    }
    db.apply(
        new Changelog(
            1,
            1,
            0,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "f")),
            List.of(new Changelog.FamilyChanges("f", changes))));
    assertThat(background).hasSize(1);
    db.apply(
        new Changelog(
            2,
            2,
            1,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, "f")),
            List.of()));
    background.remove(0).run(); // the family's handle is closed: it must not scan
    db.apply(puts(3, 0, 30_000, i -> false));
    assertThat(background).hasSize(1);
    db.close(); // releases the rebuild's snapshot: the scan must not run after it
    background.remove(0).run();
  }

  private static int mightContain(LocalDb db, int from, int to) {
    int n = 0;
    for (int i = from; i < to; i++) {
      if (db.mightContain(LocalDb.DEFAULT_FAMILY, key(i))) {
        n++;
      }
    }
    return n;
  }

  @Test
  void restoredFilesHaveNoFilterUntilAFullScanBuildsOne() {
    LocalDb db = open("restored");
    db.apply(puts(1, 0, 3_000, i -> i % 5 == 0));
    db.close();
    db = open("restored");
    try {
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
        for (int i = 0; i < 100 && c.isValid(); i++) {
          c.next(); // stopped early: not every key was seen
        }
      }
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, key(1_000))) {
        while (c.isValid()) {
          c.next(); // to the end, but not from the start
        }
      }
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      scanToEnd(db);
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertReads(db, 3_000, i -> i % 5 != 0);
      db.apply(puts(2, 3_000, 4_000, i -> false)); // after the scan: added to its filter
      assertReads(db, 4_000, i -> i >= 3_000 || i % 5 != 0);
    } finally {
      db.close();
    }
  }

  @Test
  void aScanThatAnApplyOvertookBuildsNoFilter() {
    LocalDb db = open("overtaken");
    db.apply(puts(1, 0, 2_000, i -> false));
    db.close();
    db = open("overtaken");
    try {
      try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
        c.next();
        // The cursor reads the instance as it was when created: it will not see these keys.
        db.apply(puts(2, 2_000, 3_000, i -> false));
        while (c.isValid()) {
          c.next();
        }
      }
      assertThat(db.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      assertReads(db, 3_000, i -> true);
    } finally {
      db.close();
    }
  }

  @Test
  void aCreatedFamilyStartsFilteredAndADroppedOneLosesItsFilter() {
    LocalDb db = open("families");
    try {
      List<Changelog.Change> changes = new ArrayList<>();
      for (int i = 0; i < 500; i++) {
        changes.add(new Changelog.Change(key(i), key(i)));
      }
      db.apply(
          new Changelog(
              1,
              1,
              0,
              List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "f")),
              List.of(new Changelog.FamilyChanges("f", changes))));
      assertThat(db.hasLiveKeyFilter("f")).isTrue();
      for (int i = 0; i < 600; i++) {
        assertThat(db.exists("f", key(i))).as("key %d", i).isEqualTo(i < 500);
      }
      db.apply(
          new Changelog(
              2,
              2,
              1,
              List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, "f")),
              List.of()));
      assertThat(db.hasLiveKeyFilter("f")).isFalse();
    } finally {
      db.close();
    }
  }

  @Test
  void aCheckpointCarriesTheFiltersAndAnInstanceOpenedOnItReadsFilteredAndRight() throws Exception {
    LocalDb db = open("live");
    Path checkpoint = tmp.resolve("checkpoint");
    try {
      db.apply(puts(1, 0, 4_000, i -> false));
      db.apply(puts(2, 0, 4_000, i -> i % 3 == 0));
      db.checkpoint(checkpoint);
      db.apply(puts(3, 4_000, 5_000, i -> false)); // after the checkpoint: not in its files
    } finally {
      db.close();
    }
    assertThat(checkpoint.resolve(LiveKeyFilterFile.NAME)).exists();
    LocalDb restored = openAt(checkpoint);
    try {
      assertThat(restored.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      // Taken, not left: the directory changes from here on, the file would describe the past.
      assertThat(checkpoint.resolve(LiveKeyFilterFile.NAME)).doesNotExist();
      assertReads(restored, 4_000, i -> i % 3 != 0);
      restored.apply(puts(3, 4_000, 6_000, i -> i % 7 == 0)); // the replay after a restore
      assertThat(restored.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isTrue();
      assertReads(restored, 6_000, i -> i >= 4_000 ? i % 7 != 0 : i % 3 != 0);
    } finally {
      restored.close();
    }
  }

  @Test
  void storedFiltersThatDoNotVerifyAreNotUsedAndReadsStayRight() throws Exception {
    LocalDb db = open("corrupt");
    Path checkpoint = tmp.resolve("corrupt-checkpoint");
    try {
      db.apply(puts(1, 0, 3_000, i -> false));
      db.checkpoint(checkpoint);
    } finally {
      db.close();
    }
    Path file = checkpoint.resolve(LiveKeyFilterFile.NAME);
    byte[] bytes = Files.readAllBytes(file);
    // Every bit of the first filter's first block cleared: as stored, it would rule out keys that
    // are there. The CRC catches it.
    Arrays.fill(bytes, 43, 43 + 64, (byte) 0); // after the header, the name and 20 bytes
    Files.write(file, bytes);
    assertThatThrownBy(() -> LiveKeyFilterFile.read(file))
        .hasMessageContaining(file.toString())
        .hasMessageContaining("CRC32C");
    LocalDb restored = openAt(checkpoint);
    try {
      assertThat(restored.hasLiveKeyFilter(LocalDb.DEFAULT_FAMILY)).isFalse();
      assertThat(file).doesNotExist();
      assertReads(restored, 3_000, i -> true);
    } finally {
      restored.close();
    }
  }

  @Test
  void theFileFormatRefusesLengthsPastItsEndAndKeepsFiltersExactly() throws Exception {
    LiveKeyFilter a = LiveKeyFilter.withCapacity(1_000);
    LiveKeyFilter b = LiveKeyFilter.withCapacity(70_000);
    for (int i = 0; i < 900; i++) {
      a.add(key(i));
      b.add(key(-i));
    }
    Path file = tmp.resolve("filters");
    Map<String, LiveKeyFilter> filters = new LinkedHashMap<>();
    filters.put("default", a);
    filters.put("f\u00e9", b);
    LiveKeyFilterFile.write(file, filters);
    Map<String, LiveKeyFilter> back = LiveKeyFilterFile.read(file);
    assertThat(back).containsOnlyKeys("default", "f\u00e9");
    assertThat(back.get("default").bits()).isEqualTo(a.bits());
    assertThat(back.get("f\u00e9").bits()).isEqualTo(b.bits());
    assertThat(back.get("f\u00e9").added()).isEqualTo(900);
    assertThat(back.get("f\u00e9").capacity()).isEqualTo(b.capacity());
    // A forged name length, the CRC recomputed so that only the bound can catch it.
    byte[] bytes = Files.readAllBytes(file);
    ByteBuffer.wrap(bytes).putInt(12, Integer.MAX_VALUE);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, bytes.length - 4);
    ByteBuffer.wrap(bytes).putInt(bytes.length - 4, (int) crc.getValue());
    Files.write(file, bytes);
    assertThatThrownBy(() -> LiveKeyFilterFile.read(file))
        .hasMessageContaining(file.toString())
        .hasMessageContaining("runs past the end");
  }
}
