package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A commit larger than a memtable is applied in several write batches: every put and delete lands,
 * in the changelog's order, whatever batch it fell in. One that deletes much of a family compacts
 * it after the apply returns.
 */
class LocalDbApplyTest {
  /**
   * Heap mirrors off: what is tested here is RocksDB's write path, which a mirrored store takes
   * only when RocksDB catches up with it ({@link WriteLag}), and its reads would not go through.
   */
  private static final long NO_MIRRORS = 0;

  @TempDir Path tmp;

  private static byte[] key(int i) {
    return ByteBuffer.allocate(8).putInt(7).putInt(i).array();
  }

  @Test
  void aCommitLargerThanAMemtableLandsWhole() {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, NO_MIRRORS)) {
      assertThat(budget.writeBufferBytes()).isEqualTo(1L << 20);
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      try {
        int n = 40_000; // 40k values of 200 bytes: 8 MB, eight memtables' worth
        List<Changelog.Change> first = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          first.add(new Changelog.Change(key(i), value(i, 1)));
        }
        db.apply(LocalDbFixtures.ofDefaultFamily(1, first));
        List<Changelog.Change> second = new ArrayList<>();
        for (int i = 0; i < n; i++) {
          second.add(new Changelog.Change(key(i), i % 3 == 0 ? null : value(i, 2)));
        }
        db.apply(LocalDbFixtures.ofDefaultFamily(2, second));
        for (int i = 0; i < n; i++) {
          byte[] v = db.get(LocalDb.DEFAULT_FAMILY, key(i));
          if (i % 3 == 0) {
            assertThat(v).as("key %d deleted", i).isNull();
          } else {
            assertThat(v).as("key %d", i).isEqualTo(value(i, 2));
          }
        }
      } finally {
        db.close();
      }
    }
  }

  @Test
  void aCommitDeletingMuchOfAFamilyCompactsItAndASmallOneDoesNot() throws Exception {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, NO_MIRRORS)) {
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      try {
        int n = 160_000;
        db.apply(LocalDbFixtures.ofDefaultFamily(1, numberedPuts(n)));
        // An eviction: the oldest 120k keys (the smallest), as a watermark passing windows does.
        int evicted = 120_000;
        db.apply(LocalDbFixtures.ofDefaultFamily(2, deletions(0, evicted)));
        db.awaitCompactions();
        assertThat(db.deleteCompactions()).isEqualTo(1);
        // Compacted: no tombstone is left in any file or memtable, only the live keys.
        assertThat(db.aggregatedLongProperty("rocksdb.estimate-num-keys")).isEqualTo(n - evicted);
        assertThat(db.aggregatedLongProperty("rocksdb.num-deletes-active-mem-table")).isZero();
        List<Integer> live = new ArrayList<>();
        try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
          for (; c.isValid(); c.next()) {
            live.add(ByteBuffer.wrap(c.value()).getInt());
          }
        }
        assertThat(live).hasSize(n - evicted);
        assertThat(live.get(0)).isEqualTo(evicted);

        // A small eviction leaves its tombstones to RocksDB's own compactions.
        db.apply(LocalDbFixtures.ofDefaultFamily(3, deletions(evicted, evicted + 1_000)));
        db.awaitCompactions(); // and the write, which may run after the apply returned
        assertThat(db.deleteCompactions()).isEqualTo(1);
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(evicted))).isNull();
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(evicted + 1_000))).isNotNull();
      } finally {
        db.close();
      }
    }
  }

  @Test
  void theCompactionRunsAfterTheApplyReturnsAndACloseSkipsOneNotStarted() throws Exception {
    CountDownLatch release = new CountDownLatch(1);
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, NO_MIRRORS)) {
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      Thread closer = null;
      try {
        db.apply(LocalDbFixtures.ofDefaultFamily(1, numberedPuts(160_000)));
        occupyCompactionThreads(release);
        // Every compaction thread is busy: the apply returns with its compaction queued, and the
        // instance reads the new version meanwhile.
        db.apply(LocalDbFixtures.ofDefaultFamily(2, deletions(0, 120_000)));
        assertThat(db.compactionsDone()).isNotDone();
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(0))).isNull();
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(120_000))).isNotNull();

        // A close waits for the queue to reach the compaction, which it then skips.
        closer = new Thread(db::close, "closer");
        closer.start();
        closer.join(200);
        assertThat(closer.isAlive()).as("close waits for the queued compaction").isTrue();
        release.countDown();
        closer.join();
        assertThat(db.compactionsDone()).isDone();
        assertThat(db.deleteCompactions()).as("skipped: the instance was closing").isZero();
      } finally {
        release.countDown();
        if (closer == null) {
          db.close();
        }
      }
    }
  }

  /**
   * An apply returns before RocksDB has the version (the write runs on the write pool: a commit
   * does not wait for an eviction's millions of deletions), and every read that follows waits for
   * that write: a point read, the live-key filter (the write adds the new keys to it), a scan.
   */
  @Test
  void anApplyReturnsBeforeItsWriteAndEveryReadAfterItWaitsForTheWrite() throws Exception {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, NO_MIRRORS)) {
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      List<Runnable> held = new ArrayList<>();
      db.writeExecutor(held::add);
      try {
        db.apply(LocalDbFixtures.ofDefaultFamily(1, numberedPuts(1_000)));
        assertThat(held).as("the apply returned, its write waits").hasSize(1);

        AtomicReference<byte[]> read = new AtomicReference<>();
        AtomicReference<Boolean> mayContain = new AtomicReference<>();
        AtomicInteger scanned = new AtomicInteger();
        Thread reader =
            new Thread(
                () -> {
                  read.set(db.get(LocalDb.DEFAULT_FAMILY, key(7)));
                  mayContain.set(db.mightContain(LocalDb.DEFAULT_FAMILY, key(999)));
                  try (LocalDb.Cursor c = db.newIterator(LocalDb.DEFAULT_FAMILY, null)) {
                    for (; c.isValid(); c.next()) {
                      scanned.incrementAndGet();
                    }
                  }
                });
        reader.start();
        while (reader.isAlive() && reader.getState() != Thread.State.WAITING) {
          Thread.onSpinWait(); // a reader that did not wait would end here, with nothing read
        }
        held.remove(0).run();
        reader.join();
        assertThat(read.get()).isEqualTo(ByteBuffer.allocate(8).putInt(7).array());
        assertThat(mayContain.get()).as("key 999 in the filter").isTrue();
        assertThat(scanned.get()).isEqualTo(1_000);

        // The next apply waits for the write before it; both land.
        db.apply(LocalDbFixtures.ofDefaultFamily(2, deletions(0, 10)));
        held.remove(0).run();
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(9))).isNull();
        assertThat(db.get(LocalDb.DEFAULT_FAMILY, key(10))).isNotNull();
        assertThat(db.usable()).isTrue();
      } finally {
        held.forEach(Runnable::run);
        db.close();
      }
    }
  }

  /** Keys 0 to {@code n - 1}, each with its number as the value. */
  private static List<Changelog.Change> numberedPuts(int n) {
    List<Changelog.Change> puts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      puts.add(new Changelog.Change(key(i), ByteBuffer.allocate(8).putInt(i).array()));
    }
    return puts;
  }

  /** Deletions of keys {@code from} to {@code to - 1}. */
  private static List<Changelog.Change> deletions(int from, int to) {
    List<Changelog.Change> deletions = new ArrayList<>();
    for (int i = from; i < to; i++) {
      deletions.add(new Changelog.Change(key(i), null));
    }
    return deletions;
  }

  /** Blocks every thread of the compaction pool until {@code release}. */
  private static void occupyCompactionThreads(CountDownLatch release) throws InterruptedException {
    int threads = ((ThreadPoolExecutor) CompactionPool.EXECUTOR).getMaximumPoolSize();
    CountDownLatch started = new CountDownLatch(threads);
    for (int i = 0; i < threads; i++) {
      CompactionPool.EXECUTOR.execute(
          () -> {
            started.countDown();
            try {
              release.await();
            } catch (InterruptedException e) {
              Thread.currentThread().interrupt();
            }
          });
    }
    started.await();
  }

  private static byte[] value(int i, int version) {
    byte[] v = new byte[200];
    ByteBuffer.wrap(v).putInt(i).putInt(version);
    return v;
  }
}
