package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * RocksDB's flushes and an instance's close ask the budget's trimmer for a trim of the C heap, and
 * a trimmer set to 0 never trims. Real RocksDB, real trims (HotSpot's command on glibc).
 */
class NativeHeapTrimmerTest {
  @TempDir Path tmp;

  @Test
  void flushesAndACloseTrimTheNativeHeap() throws Exception {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, 0, 1)) {
      NativeHeapTrimmer trimmer = budget.trimmer();
      assumeThat(trimmer.enabled()).as("this JVM can trim its C heap").isTrue();
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      long afterFlushes;
      try {
        assertThat(trimmer.trims()).isZero(); // nothing flushed yet, nothing asked
        db.apply(
            LocalDbFixtures.ofDefaultFamily(
                1, puts(40_000))); // 8 MB: eight 1 MiB memtables, flushed
        afterFlushes = awaitAbove(trimmer::trims, 0);
      } finally {
        db.close();
      }
      awaitAbove(trimmer::trims, afterFlushes); // the close asked for one more
      assertThat(trimmer.trimNanos()).isPositive();
    }
  }

  @Test
  void anIntervalOfZeroNeverTrims() {
    try (ProcessResources resources = new ProcessResources("test");
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(8L << 20, 0, 0)) {
      NativeHeapTrimmer trimmer = budget.trimmer();
      assertThat(trimmer.enabled()).isFalse();
      LocalDb db = LocalDbFixtures.open(tmp, resources, budget);
      try {
        db.apply(LocalDbFixtures.ofDefaultFamily(1, puts(40_000)));
        db.awaitCompactions();
      } finally {
        db.close();
      }
      trimmer.request();
      assertThat(trimmer.trims()).isZero();
    }
  }

  /** Waits until {@code count} exceeds {@code floor}; returns it. Fails after a minute. */
  private static long awaitAbove(LongSupplier count, long floor) throws InterruptedException {
    for (int i = 0; i < 6_000; i++) {
      long now = count.getAsLong();
      if (now > floor) {
        return now;
      }
      Thread.sleep(10);
    }
    throw new AssertionError("no trim after a minute (still " + count.getAsLong() + ")");
  }

  private static List<Changelog.Change> puts(int n) {
    List<Changelog.Change> puts = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      byte[] value = new byte[200];
      ByteBuffer.wrap(value).putInt(i);
      puts.add(new Changelog.Change(ByteBuffer.allocate(8).putInt(7).putInt(i).array(), value));
    }
    return puts;
  }
}
