package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A store's heap mirror ({@link HeapMirror}) answers reads and scans exactly as a sorted map of the
 * committed state does, and as RocksDB does for the same changes: from a fresh store on, after a
 * full scan of a restored one, through deletions, re-puts and value changes; it is dropped, never
 * left partial, when it outgrows its budget, when changes come out of order or when an apply
 * interrupts the scan building it; and every byte it charged is given back.
 */
class HeapMirrorTest {
  private static final String FAMILY = LocalDb.DEFAULT_FAMILY;

  @TempDir Path tmp;
  private ProcessResources resources;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeEach
  void start() {
    resources = new ProcessResources("test");
  }

  @AfterEach
  void stop() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
    resources.close();
  }

  private RocksDbMemoryBudget budget(long heapMirrorBytes) {
    RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20, heapMirrorBytes);
    toClose.add(budget);
    return budget;
  }

  private LocalDb open(String name, Path dir, RocksDbMemoryBudget budget) {
    LocalDb db =
        LocalDb.open(
            name, dir, budget, OpenDatabases.of(resources), LocalSpace.unmanaged(name, tmp));
    toClose.add(db);
    return db;
  }

  private static byte[] key(int i) {
    // Little-endian, as Spark's UnsafeRow keys: the byte order is not the numeric order.
    return ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(i).array();
  }

  private static byte[] value(int i, int version) {
    // Lengths vary: a value change charges or gives back bytes.
    return ByteBuffer.allocate(4 + (i + version) % 13).putInt(i * 31 + version).array();
  }

  /** Random puts (new keys, re-puts) and deletes of keys below {@code range}, in key order. */
  private static List<Changelog.Change> changes(Random random, int version, int count, int range) {
    TreeMap<byte[], byte[]> batch = new TreeMap<>(Arrays::compareUnsigned);
    for (int n = 0; n < count; n++) {
      int i = random.nextInt(range);
      batch.put(key(i), random.nextInt(4) == 0 ? null : value(i, version));
    }
    List<Changelog.Change> changes = new ArrayList<>();
    batch.forEach((k, v) -> changes.add(new Changelog.Change(k, v)));
    return changes;
  }

  private static Changelog changelog(int version, List<Changelog.Change> changes) {
    return new Changelog(
        version,
        version,
        version - 1,
        List.of(),
        List.of(new Changelog.FamilyChanges(FAMILY, changes)));
  }

  private static void applyToModel(TreeMap<byte[], byte[]> model, List<Changelog.Change> changes) {
    for (Changelog.Change c : changes) {
      if (c.isDelete()) {
        model.remove(c.key());
      } else {
        model.put(c.key(), c.value());
      }
    }
  }

  /**
   * Every read path of {@code db} against the model: point reads, existence, scans from anywhere.
   */
  private static void assertAnswersAs(LocalDb db, TreeMap<byte[], byte[]> model, Random random) {
    for (int i = -5; i < 3_100; i++) {
      byte[] k = key(i);
      assertThat(db.get(FAMILY, k)).as("get %d", i).isEqualTo(model.get(k));
      assertThat(db.exists(FAMILY, k)).as("exists %d", i).isEqualTo(model.containsKey(k));
      if (model.containsKey(k)) {
        assertThat(db.mightContain(FAMILY, k)).as("mightContain %d", i).isTrue();
      }
    }
    assertThat(scan(db, null)).containsExactlyElementsOf(entries(model, null));
    for (int n = 0; n < 20; n++) {
      byte[] from = key(random.nextInt(3_200) - 50);
      assertThat(scan(db, from))
          .as("scan from %s", Arrays.toString(from))
          .containsExactlyElementsOf(entries(model, from));
    }
  }

  private static List<String> scan(LocalDb db, byte[] from) {
    List<String> seen = new ArrayList<>();
    try (LocalDb.Cursor c = db.newIterator(FAMILY, from)) {
      while (c.isValid()) {
        seen.add(Arrays.toString(c.key()) + "=" + Arrays.toString(c.value()));
        c.next();
      }
    }
    return seen;
  }

  private static List<String> entries(TreeMap<byte[], byte[]> model, byte[] from) {
    List<String> all = new ArrayList<>();
    for (Map.Entry<byte[], byte[]> e :
        (from == null ? model : model.tailMap(from, true)).entrySet()) {
      all.add(Arrays.toString(e.getKey()) + "=" + Arrays.toString(e.getValue()));
    }
    return all;
  }

  private static long bytesOf(TreeMap<byte[], byte[]> model) {
    long bytes = 0;
    for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
      bytes += HeapMirror.entryBytes(e.getKey(), e.getValue());
    }
    return bytes;
  }

  @Test
  void aFreshStoreIsMirroredAndAnswersAsTheModelAndAsRocksDbAlone() {
    RocksDbMemoryBudget withMirrors = budget(64L << 20);
    LocalDb mirrored = open("m", tmp.resolve("m"), withMirrors);
    LocalDb rocksOnly = open("r", tmp.resolve("r"), budget(0));
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(7);
    for (int version = 1; version <= 12; version++) {
      List<Changelog.Change> changes = changes(random, version, 1_500, 3_000);
      mirrored.apply(changelog(version, changes));
      rocksOnly.apply(changelog(version, changes));
      applyToModel(model, changes);
      assertThat(mirrored.mirrored(FAMILY)).isTrue();
      assertThat(rocksOnly.mirrored(FAMILY)).isFalse();
      assertAnswersAs(mirrored, model, random);
      assertAnswersAs(rocksOnly, model, random);
      assertThat(mirrored.mirrorBytes(FAMILY)).isEqualTo(bytesOf(model));
      assertThat(withMirrors.heapMirrors().usedBytes()).isEqualTo(bytesOf(model));
    }
    mirrored.close();
    assertThat(withMirrors.heapMirrors().usedBytes()).as("given back on close").isZero();
  }

  @Test
  void aCursorReadsTheVersionItWasMadeOnAsRocksDbDoes() {
    LocalDb db = open("m", tmp.resolve("m"), budget(64L << 20));
    Random random = new Random(11);
    List<Changelog.Change> first = changes(random, 1, 2_000, 3_000);
    db.apply(changelog(1, first));
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    applyToModel(model, first);
    List<String> seen = new ArrayList<>();
    try (LocalDb.Cursor c = db.newIterator(FAMILY, null)) {
      for (int n = 0; n < 100; n++) {
        seen.add(Arrays.toString(c.key()) + "=" + Arrays.toString(c.value()));
        c.next();
      }
      db.apply(changelog(2, changes(random, 2, 2_000, 3_000))); // while the cursor is open
      while (c.isValid()) {
        seen.add(Arrays.toString(c.key()) + "=" + Arrays.toString(c.value()));
        c.next();
      }
    }
    assertThat(seen).containsExactlyElementsOf(entries(model, null));
  }

  /** A checkpoint of versions 1-3 of random changes (keys below 3,000), in {@code dir}. */
  private TreeMap<byte[], byte[]> restorable(Path dir, Random random) {
    LocalDb writer = open("w", tmp.resolve("w-" + dir.getFileName()), budget(0));
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    for (int version = 1; version <= 3; version++) {
      List<Changelog.Change> changes = changes(random, version, 1_500, 3_000);
      writer.apply(changelog(version, changes));
      applyToModel(model, changes);
    }
    writer.checkpoint(dir);
    return model;
  }

  @Test
  void aRestoredStoreThatFitsIsMirroredAtOpen() {
    RocksDbMemoryBudget budget = budget(64L << 20);
    Random random = new Random(31);
    TreeMap<byte[], byte[]> model = restorable(tmp.resolve("restored"), random);
    LocalDb db = open("m", tmp.resolve("restored"), budget);
    assertThat(db.mirrored(FAMILY)).as("mirrored before any read or scan").isTrue();
    assertThat(db.mirrorBytes(FAMILY)).isEqualTo(bytesOf(model));
    assertThat(budget.heapMirrors().usedBytes()).isEqualTo(bytesOf(model));
    assertAnswersAs(db, model, random);
    applyAndCheckMirror(db, model, random, 4, 6);
  }

  @Test
  void aRestoredFamilyTooLargeForAMirrorIsNotCopiedAtOpenNorByLaterScans() {
    TreeMap<byte[], byte[]> model = restorable(tmp.resolve("restored"), new Random(37));
    restorable(tmp.resolve("restored-copy"), new Random(37)); // the same state again
    Random random = new Random(41);
    // More keys than a 40,000-byte family cap holds at its overhead an entry: not scanned at all.
    assertThat(model.size()).isGreaterThan(40_000 / (int) HeapMirror.ENTRY_OVERHEAD);
    RocksDbMemoryBudget tiny = budget(40_000);
    LocalDb byEstimate = open("e", tmp.resolve("restored"), tiny);
    assertThat(byEstimate.mirrored(FAMILY)).isFalse();
    // Few enough keys by the estimate, too many bytes: the scan stops at the cap, gives it back.
    long smallCap = (bytesOf(model) + model.size() * HeapMirror.ENTRY_OVERHEAD) / 2;
    assertThat(bytesOf(model)).isGreaterThan(smallCap);
    assertThat((long) model.size()).isLessThan(smallCap / HeapMirror.ENTRY_OVERHEAD);
    RocksDbMemoryBudget small = budget(smallCap);
    LocalDb byBytes = open("b", tmp.resolve("restored-copy"), small);
    assertThat(byBytes.mirrored(FAMILY)).isFalse();
    assertThat(small.heapMirrors().usedBytes()).isZero();
    for (Map.Entry<LocalDb, RocksDbMemoryBudget> e :
        Map.of(byEstimate, tiny, byBytes, small).entrySet()) {
      LocalDb db = e.getKey();
      // Remembered as too large: a full scan copies nothing while RocksDB holds as many keys.
      try (LocalDb.Cursor c = db.newIterator(FAMILY, null)) {
        while (c.isValid()) {
          assertThat(e.getValue().heapMirrors().usedBytes()).isZero();
          c.next();
        }
      }
      assertThat(db.mirrored(FAMILY)).isFalse();
      assertAnswersAs(db, model, random);
    }
  }

  @Test
  void aRestoredStoreIsMirroredByAFullScanThatNoApplyInterrupted() {
    RocksDbMemoryBudget budget = budget(400_000);
    Random random = new Random(13);
    TreeMap<byte[], byte[]> model = restorable(tmp.resolve("restored"), random);
    // Another store holds most of the process's budget while this one opens: its open cannot
    // mirror it, and leaves the full scans free to try at once.
    LocalDb other = open("o", tmp.resolve("o"), budget);
    other.apply(changelog(1, changes(random, 1, 6_000, 1_000_000)));
    long held = budget.heapMirrors().usedBytes();
    assertThat(other.mirrored(FAMILY)).isTrue();
    assertThat(held + bytesOf(model)).isGreaterThan(400_000);
    LocalDb db = open("m", tmp.resolve("restored"), budget);
    assertThat(db.mirrored(FAMILY)).as("restored while the budget was full").isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isEqualTo(held);
    other.close();
    assertThat(budget.heapMirrors().usedBytes()).isZero();

    // A scan closed part way: nothing kept, every byte given back.
    try (LocalDb.Cursor c = db.newIterator(FAMILY, null)) {
      for (int n = 0; n < 500; n++) {
        c.next();
      }
      assertThat(budget.heapMirrors().usedBytes()).as("charged while building").isPositive();
    }
    assertThat(db.mirrored(FAMILY)).isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isZero();

    // A full scan an apply interrupted: not complete, not kept.
    List<Changelog.Change> fourth = changes(random, 4, 1_500, 3_000);
    try (LocalDb.Cursor c = db.newIterator(FAMILY, null)) {
      c.next();
      db.apply(changelog(4, fourth));
      while (c.isValid()) {
        c.next();
      }
    }
    applyToModel(model, fourth);
    assertThat(db.mirrored(FAMILY)).isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isZero();

    // A scan from a key past the start is not a full scan either.
    try (LocalDb.Cursor c = db.newIterator(FAMILY, key(1_000))) {
      while (c.isValid()) {
        c.next();
      }
    }
    assertThat(db.mirrored(FAMILY)).isFalse();

    assertThat(scan(db, null)).containsExactlyElementsOf(entries(model, null));
    assertThat(db.mirrored(FAMILY)).as("after a full scan").isTrue();
    assertThat(db.mirrorBytes(FAMILY)).isEqualTo(bytesOf(model));
    applyAndCheckMirror(db, model, random, 5, 8);
  }

  /**
   * Applies random versions {@code from..to} to a mirrored {@code db} and the model; every read
   * path answers as the model after each, and the mirror holds the model's bytes at the end.
   */
  private static void applyAndCheckMirror(
      LocalDb db, TreeMap<byte[], byte[]> model, Random random, int from, int to) {
    for (int version = from; version <= to; version++) {
      List<Changelog.Change> changes = changes(random, version, 1_500, 3_000);
      db.apply(changelog(version, changes));
      applyToModel(model, changes);
      assertAnswersAs(db, model, random);
    }
    assertThat(db.mirrorBytes(FAMILY)).isEqualTo(bytesOf(model));
  }

  @Test
  void aMirrorThatOutgrowsItsBudgetIsDroppedAndReadsStayRight() {
    RocksDbMemoryBudget budget = budget(100_000); // about 1,500 entries
    LocalDb db = open("m", tmp.resolve("m"), budget);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(17);
    List<Changelog.Change> small = changes(random, 1, 500, 3_000);
    db.apply(changelog(1, small));
    applyToModel(model, small);
    assertThat(db.mirrored(FAMILY)).isTrue();
    assertThat(budget.heapMirrors().usedBytes()).isEqualTo(bytesOf(model));
    for (int version = 2; version <= 5; version++) {
      List<Changelog.Change> changes = changes(random, version, 1_500, 3_000);
      db.apply(changelog(version, changes));
      applyToModel(model, changes);
    }
    assertThat(bytesOf(model)).isGreaterThan(100_000);
    assertThat(db.mirrored(FAMILY)).isFalse();
    assertThat(budget.heapMirrors().usedBytes()).as("given back when dropped").isZero();
    // Too large for a mirror: no full scan copies it again while RocksDB holds as many keys.
    for (int scan = 0; scan < 5; scan++) {
      try (LocalDb.Cursor c = db.newIterator(FAMILY, null)) {
        for (int n = 0; n < 100; n++) {
          c.next();
        }
        assertThat(budget.heapMirrors().usedBytes()).as("scan %d after the drop", scan).isZero();
      }
    }
    assertAnswersAs(db, model, random);
    assertThat(db.mirrored(FAMILY)).as("a full scan that does not fit keeps none").isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isZero();
  }

  @Test
  void aFamilyRefusedForAFullProcessBudgetIsTriedAgainAfterTwiceAsManyScansEachTime() {
    RocksDbMemoryBudget budget = budget(150_000); // shared; one family's cap is also 150,000
    LocalDb first = open("a", tmp.resolve("a"), budget);
    LocalDb second = open("b", tmp.resolve("b"), budget);
    Random random = new Random(23);
    first.apply(changelog(1, changes(random, 1, 1_500, 3_000)));
    assertThat(first.mirrored(FAMILY)).isTrue();
    long held = budget.heapMirrors().usedBytes();
    List<Changelog.Change> changes = changes(random, 1, 3_000, 3_000);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    applyToModel(model, changes);
    assertThat(bytesOf(model)).isLessThan(150_000).isGreaterThan(150_000 - held);
    second.apply(changelog(1, changes)); // fits a family, not what the process has left
    assertThat(second.mirrored(FAMILY)).isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isEqualTo(held);
    // A full scan that tries copies until the budget refuses: it charges while it runs.
    List<Boolean> tried = new ArrayList<>();
    for (int scan = 0; scan < 10; scan++) {
      boolean charged = false;
      try (LocalDb.Cursor c = second.newIterator(FAMILY, null)) {
        while (c.isValid()) {
          charged |= budget.heapMirrors().usedBytes() > held;
          c.next();
        }
      }
      tried.add(charged);
      assertThat(budget.heapMirrors().usedBytes()).isEqualTo(held);
    }
    // Refused by the apply: 1 scan passes; then 2, then 4.
    assertThat(tried)
        .containsExactly(false, true, false, false, true, false, false, false, false, true);
    assertThat(second.mirrored(FAMILY)).isFalse();
    assertAnswersAs(second, model, random);
  }

  @Test
  void everyWayOfBeingOutOfOrderIsRefusedAndLeavesTheMirrorAsItWas() {
    // Old keys 10, 20, 30 (big-endian: byte order is numeric order here).
    HeapMirror mirror = new HeapMirror(new HeapMirrorBudget(1 << 20, 1 << 20));
    for (int k : new int[] {10, 20, 30}) {
      assertThat(mirror.append(beKey(k), value(k, 0))).isTrue();
    }
    mirror.publish();
    List<int[]> refused =
        List.of(
            new int[] {20, 20}, // the same old key twice
            new int[] {15, 15}, // the same new key twice
            new int[] {17, 15}, // two new keys in one gap, descending
            new int[] {25, 20}, // a new key, then an old key below it
            new int[] {30, 5}, // an old key, then a new key below every key
            new int[] {40, 35}); // past the last key, descending
    for (int[] order : refused) {
      List<Changelog.Change> changes = new ArrayList<>();
      for (int k : order) {
        changes.add(new Changelog.Change(beKey(k), value(k, 1)));
      }
      assertThat(mirror.apply(changes)).as("%s", Arrays.toString(order)).isFalse();
      assertThat(mirror.refusal()).isEqualTo(HeapMirror.Refusal.OUT_OF_ORDER);
      assertThat(mirror.size()).isEqualTo(3);
      assertThat(mirror.get(beKey(20))).isEqualTo(value(20, 0));
    }
    List<Changelog.Change> ascending = new ArrayList<>();
    for (int k : new int[] {5, 15, 17, 20, 25, 35, 40}) {
      ascending.add(new Changelog.Change(beKey(k), k == 20 ? null : value(k, 1)));
    }
    assertThat(mirror.apply(ascending)).isTrue();
    assertThat(mirror.size()).isEqualTo(8);
    assertThat(mirror.get(beKey(20))).isNull();
  }

  private static byte[] beKey(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  @Test
  void changesOutOfOrderDropTheMirrorAndRocksDbStillHasThem() {
    LocalDb db = open("m", tmp.resolve("m"), budget(64L << 20));
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(19);
    List<Changelog.Change> first = changes(random, 1, 1_000, 3_000);
    db.apply(changelog(1, first));
    applyToModel(model, first);
    List<Changelog.Change> unordered = new ArrayList<>(changes(random, 2, 1_000, 3_000));
    java.util.Collections.reverse(unordered);
    db.apply(changelog(2, unordered));
    applyToModel(model, unordered);
    assertThat(db.mirrored(FAMILY)).isFalse();
    assertAnswersAs(db, model, random);
  }

  /** Version 1: creates the family "extra" and puts key 1 into it. */
  private static Changelog createExtraWithKeyOne() {
    return new Changelog(
        1,
        1,
        0,
        List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "extra")),
        List.of(
            new Changelog.FamilyChanges(
                "extra", List.of(new Changelog.Change(key(1), value(1, 1))))));
  }

  @Test
  void aNewFamilyStartsMirroredAndADroppedOneGivesItsBytesBack() {
    RocksDbMemoryBudget budget = budget(64L << 20);
    LocalDb db = open("m", tmp.resolve("m"), budget);
    db.apply(createExtraWithKeyOne());
    assertThat(db.mirrored("extra")).isTrue();
    assertThat(db.get("extra", key(1))).isEqualTo(value(1, 1));
    assertThat(budget.heapMirrors().usedBytes()).isPositive();
    db.apply(
        new Changelog(
            2,
            2,
            1,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, "extra")),
            List.of()));
    assertThat(db.mirrored("extra")).isFalse();
    assertThat(budget.heapMirrors().usedBytes()).isZero();
  }

  /** Holds the tasks it is given until {@link #release}, which runs them in order. */
  private static final class HeldWrites implements java.util.concurrent.Executor {
    private final List<Runnable> held = new ArrayList<>();

    @Override
    public synchronized void execute(Runnable task) {
      held.add(task);
    }

    synchronized int held() {
      return held.size();
    }

    void release() {
      List<Runnable> tasks;
      synchronized (this) {
        tasks = new ArrayList<>(held);
        held.clear();
      }
      tasks.forEach(Runnable::run);
    }
  }

  /** A fresh store "m" whose writes after an apply wait in {@code writes}. */
  private LocalDb openHoldingWrites(RocksDbMemoryBudget budget, HeldWrites writes) {
    LocalDb db = open("m", tmp.resolve("m"), budget);
    db.writeExecutor(writes);
    return db;
  }

  /** Releases {@code writes} once {@code waiter} waits (on the write it holds, if all is right). */
  private static Thread releaseWhenWaiting(Thread waiter, HeldWrites writes) {
    Thread releaser =
        new Thread(
            () -> {
              while (waiter.getState() != Thread.State.WAITING) {
                Thread.onSpinWait();
              }
              writes.release();
            });
    releaser.start();
    return releaser;
  }

  /**
   * Version {@code v} of a window-like workload: puts keys {@code v*100 ..} (new), re-puts half of
   * the previous version's keys with new values, and deletes the keys put three versions earlier.
   */
  private static List<Changelog.Change> windowLike(int v) {
    TreeMap<byte[], byte[]> batch = new TreeMap<>(Arrays::compareUnsigned);
    for (int i = v * 100; i < v * 100 + 100; i++) {
      batch.put(key(i), value(i, v));
    }
    for (int i = (v - 1) * 100; i < (v - 1) * 100 + 50 && v > 1; i++) {
      batch.put(key(i), value(i, v));
    }
    for (int i = (v - 3) * 100; i < (v - 3) * 100 + 100 && v > 3; i++) {
      batch.put(key(i), null);
    }
    List<Changelog.Change> changes = new ArrayList<>();
    batch.forEach((k, val) -> changes.add(new Changelog.Change(k, val)));
    return changes;
  }

  @Test
  void aMirroredStoresRocksDbTakesOnlyTheDifferenceAndOnlyWhenACheckpointReadsIt() {
    RocksDbMemoryBudget budget = budget(64L << 20);
    HeldWrites writes = new HeldWrites();
    LocalDb db = openHoldingWrites(budget, writes);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(23);
    long applied = 0;
    for (int v = 1; v <= 10; v++) {
      List<Changelog.Change> changes = windowLike(v);
      db.apply(changelog(v, changes));
      applyToModel(model, changes);
      applied += changes.size();
    }
    assertThat(writes.held()).as("no write after an apply either").isZero();
    assertThat(db.changesCaughtUp()).as("nothing written yet").isZero();
    assertAnswersAs(db, model, random);
    db.checkpoint(tmp.resolve("first"));
    // From an empty RocksDB: one put per live key, none for the 700 keys put and deleted since.
    assertThat(db.changesCaughtUp()).isEqualTo(model.size()).isLessThan(applied / 3);
    assertAnswersAs(open("r1", tmp.resolve("first"), budget(0)), model, random);

    // A lag from a state RocksDB holds: the entries the mirror had then are charged until it ends.
    long mirrorAtStart = db.mirrorBytes(FAMILY);
    for (int v = 11; v <= 16; v++) {
      List<Changelog.Change> changes = windowLike(v);
      db.apply(changelog(v, changes));
      applyToModel(model, changes);
      assertThat(budget.heapMirrors().usedBytes())
          .isEqualTo(db.mirrorBytes(FAMILY) + mirrorAtStart);
    }
    long before = db.changesCaughtUp();
    db.checkpoint(tmp.resolve("second"));
    assertThat(budget.heapMirrors().usedBytes()).isEqualTo(db.mirrorBytes(FAMILY));
    // Keys 800-1099 deleted, 1400-1699 put: the 300 keys between came and went in the lag.
    assertThat(db.changesCaughtUp() - before).isEqualTo(300 + 300);
    assertAnswersAs(open("r2", tmp.resolve("second"), budget(0)), model, random);
    assertThat(writes.held()).isZero();
  }

  @Test
  void aStorePastHalfItsMirrorCapCatchesUpOnThePoolAndLagsNoMore() {
    RocksDbMemoryBudget budget = budget(150_000); // one family's mirror: 150,000 bytes
    HeldWrites writes = new HeldWrites();
    LocalDb db = openHoldingWrites(budget, writes);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(29);
    List<Changelog.Change> first = changes(random, 1, 300, 3_000);
    db.apply(changelog(1, first));
    applyToModel(model, first);
    assertThat(writes.held()).as("well under half the cap: RocksDB lags").isZero();

    List<Changelog.Change> second = changes(random, 2, 2_000, 3_000);
    db.apply(changelog(2, second));
    applyToModel(model, second);
    assertThat(db.mirrorBytes(FAMILY)).isBetween(75_001L, 150_000L);
    assertThat(writes.held()).as("past half: the lag ends on the pool").isEqualTo(1);
    writes.release();
    long caughtUp = db.changesCaughtUp();
    assertThat(caughtUp).isEqualTo(model.size());

    List<Changelog.Change> third = changes(random, 3, 200, 3_000);
    db.apply(changelog(3, third));
    applyToModel(model, third);
    assertThat(writes.held()).as("no lag begins: written after the apply").isEqualTo(1);
    writes.release();
    assertThat(db.changesCaughtUp()).as("version 3 as it came, not a catch-up").isEqualTo(caughtUp);
    db.checkpoint(tmp.resolve("checkpoint"));
    assertAnswersAs(open("r", tmp.resolve("checkpoint"), budget(0)), model, random);
    assertAnswersAs(db, model, random);
  }

  @Test
  void familiesCreatedAndDroppedWhileRocksDbLagsReachItAsTheNewestVersionHasThem() {
    LocalDb db = open("m", tmp.resolve("m"), budget(64L << 20));
    db.apply(createExtraWithKeyOne());
    db.apply(
        new Changelog(
            2,
            2,
            1,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, "extra")),
            List.of()));
    db.apply(
        new Changelog(
            3,
            3,
            2,
            List.of(
                new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "extra"),
                new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "other")),
            List.of(
                new Changelog.FamilyChanges(
                    "extra", List.of(new Changelog.Change(key(2), value(2, 3)))),
                new Changelog.FamilyChanges(
                    "other", List.of(new Changelog.Change(key(3), value(3, 3)))))));
    db.apply(
        new Changelog(
            4,
            4,
            3,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.DROP, "other")),
            List.of(
                new Changelog.FamilyChanges(
                    FAMILY, List.of(new Changelog.Change(key(4), value(4, 4)))))));
    db.checkpoint(tmp.resolve("checkpoint"));
    LocalDb restored = open("r", tmp.resolve("checkpoint"), budget(0));
    assertThat(restored.familyNames()).containsExactlyInAnyOrder(FAMILY, "extra");
    assertThat(restored.get("extra", key(1))).as("put before the family was dropped").isNull();
    assertThat(restored.get("extra", key(2))).isEqualTo(value(2, 3));
    assertThat(restored.get(FAMILY, key(4))).isEqualTo(value(4, 4));
  }

  @Test
  void aLagTheBudgetRefusesLeavesTheWriteToRunAfterTheApplyAndACheckpointWaitsForIt()
      throws Exception {
    RocksDbMemoryBudget budget = budget(64L << 20);
    HeldWrites writes = new HeldWrites();
    LocalDb db = openHoldingWrites(budget, writes);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(11);
    List<Changelog.Change> first = changes(random, 1, 2_000, 3_000);
    db.apply(changelog(1, first));
    applyToModel(model, first);
    db.checkpoint(tmp.resolve("first")); // RocksDB holds version 1
    // Other stores' mirrors hold the budget but for half this mirror: a lag from here (charging
    // the whole mirror) is refused, the next version's few new entries still fit.
    HeapMirrorBudget heap = budget.heapMirrors();
    long others = heap.capBytes() - heap.usedBytes() - db.mirrorBytes(FAMILY) / 2;
    assertThat(heap.tryCharge(others)).isTrue();
    List<Changelog.Change> second = changes(random, 2, 200, 3_000);
    db.apply(changelog(2, second));
    applyToModel(model, second);
    assertThat(db.mirrored(FAMILY)).isTrue();
    assertThat(writes.held()).as("RocksDB's write waits, the apply returned").isEqualTo(1);
    assertAnswersAs(db, model, random); // from the mirror alone
    assertThat(db.estimateKeys()).isEqualTo(model.size());

    // The next apply writes after the held one, and a checkpoint has both.
    Thread releaser = releaseWhenWaiting(Thread.currentThread(), writes);
    List<Changelog.Change> third = changes(random, 3, 200, 3_000);
    db.apply(changelog(3, third));
    releaser.join();
    applyToModel(model, third);
    releaser = releaseWhenWaiting(Thread.currentThread(), writes);
    Path checkpoint = tmp.resolve("checkpoint");
    db.checkpoint(checkpoint);
    releaser.join();
    assertThat(writes.held()).isZero();
    assertThat(db.changesCaughtUp())
        .as("only version 1's lag")
        .isEqualTo(first.stream().filter(c -> !c.isDelete()).count());
    heap.release(others);
    LocalDb restored = open("r", checkpoint, budget(0));
    assertAnswersAs(restored, model, random);
    assertThat(restored.hasLiveKeyFilter(FAMILY))
        .as("the checkpoint carries a filter made from the mirror's keys")
        .isTrue();
  }

  @Test
  void aStoreWithAFamilyNotMirroredCatchesUpBeforeItsApplyReturnsAndWritesTheVersionAfter()
      throws Exception {
    // Room for the first version's mirror, not the second's.
    HeldWrites writes = new HeldWrites();
    LocalDb db = openHoldingWrites(budget(64L << 20), writes);
    TreeMap<byte[], byte[]> model = new TreeMap<>(Arrays::compareUnsigned);
    Random random = new Random(13);
    db.apply(createExtraWithKeyOne());
    assertThat(writes.held()).as("RocksDB lags: nothing to write yet").isZero();
    // Out of order: the default family's mirror goes, so the apply ends the lag before it
    // returns (version 1's key in "extra"), and leaves version 2's write to run after it.
    List<Changelog.Change> reversed = new ArrayList<>(changes(random, 2, 500, 3_000));
    java.util.Collections.reverse(reversed);
    db.apply(changelog(2, reversed));
    applyToModel(model, reversed);
    assertThat(db.mirrored(FAMILY)).isFalse();
    assertThat(db.mirrored("extra")).isTrue();
    assertThat(db.changesCaughtUp()).as("the lag ended before the apply returned").isEqualTo(1);
    assertThat(writes.held()).as("version 2's write waits, the apply returned").isEqualTo(1);
    // A read of the family RocksDB alone holds waits for that write.
    Thread releaser = releaseWhenWaiting(Thread.currentThread(), writes);
    assertAnswersAs(db, model, random);
    releaser.join();
    assertThat(writes.held()).isZero();
    db.checkpoint(tmp.resolve("checkpoint"));
    assertThat(open("r", tmp.resolve("checkpoint"), budget(0)).get("extra", key(1)))
        .isEqualTo(value(1, 1));
  }
}
