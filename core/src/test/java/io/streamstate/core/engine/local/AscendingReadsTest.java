package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.format.Changelog;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Reads through {@link AscendingReads} answer as a sorted map holding the same state, whatever
 * their order: dense and sparse ascending runs (the iterator's steps and its seeks), keys never
 * written, deleted keys, keys before the first and after the last, descending and random reads,
 * over entries spread across flushed files and the memtable.
 */
class AscendingReadsTest {
  @TempDir Path tmp;

  private static byte[] key(int i) {
    // Little-endian, as Spark's UnsafeRow keys: the byte order is not the numeric order.
    return ByteBuffer.allocate(8).order(java.nio.ByteOrder.LITTLE_ENDIAN).putLong(i).array();
  }

  private static byte[] value(int i, int version) {
    return ByteBuffer.allocate(8).putInt(i).putInt(version).array();
  }

  @Test
  void readsInAnyOrderAnswerAsASortedMap() {
    try (ProcessResources resources = new ProcessResources("test");
        // RocksDB's own reads: no heap mirror (HeapMirrorTest covers that path).
        RocksDbMemoryBudget budget = new RocksDbMemoryBudget(16L << 20, 0)) {
      LocalDb db =
          LocalDb.open(
              "s",
              tmp.resolve("db"),
              budget,
              OpenDatabases.of(resources),
              LocalSpace.unmanaged("s", tmp));
      try {
        TreeMap<byte[], byte[]> model = new TreeMap<>(java.util.Arrays::compareUnsigned);
        Random random = new Random(42);
        for (int version = 1; version <= 4; version++) {
          List<Changelog.Change> changes = new ArrayList<>();
          TreeMap<byte[], byte[]> batch = new TreeMap<>(java.util.Arrays::compareUnsigned);
          for (int n = 0; n < 20_000; n++) {
            int i = random.nextInt(60_000);
            if (random.nextInt(4) == 0) {
              batch.put(key(i), null);
            } else {
              batch.put(key(i), value(i, version));
            }
          }
          batch.forEach(
              (k, v) -> {
                changes.add(new Changelog.Change(k, v));
                if (v == null) {
                  model.remove(k);
                } else {
                  model.put(k, v);
                }
              });
          db.apply(
              new Changelog(
                  version,
                  version,
                  version - 1,
                  List.of(),
                  List.of(new Changelog.FamilyChanges(LocalDb.DEFAULT_FAMILY, changes))));
          if (version < 4) {
            db.checkpoint(tmp.resolve("flush-" + version)); // flushes: entries in files
          }
        }
        List<byte[]> all = new ArrayList<>();
        for (int i = -10; i < 60_010; i++) {
          all.add(key(i));
        }
        all.sort(java.util.Arrays::compareUnsigned);
        long iteratorReads = 0;
        try (AscendingReads reads = db.ascendingReads(LocalDb.DEFAULT_FAMILY)) {
          // Dense ascending: every key in order, written or not.
          for (byte[] k : all) {
            assertThat(reads.get(k)).as("dense %s", k).isEqualTo(model.get(k));
          }
          assertThat(reads.iteratorReads()).as("dense reads stepped").isGreaterThan(50_000);
          iteratorReads = reads.iteratorReads();
        }
        for (int pass = 0; pass < 20; pass++) {
          try (AscendingReads reads = db.ascendingReads(LocalDb.DEFAULT_FAMILY)) {
            int stride = 1 + random.nextInt(40); // past the iterator's few steps, or not
            int at = random.nextInt(100);
            while (at < all.size()) {
              byte[] k = all.get(at);
              assertThat(reads.get(k)).as("stride %d at %d", stride, at).isEqualTo(model.get(k));
              int r = random.nextInt(100);
              if (r < 3) {
                at = Math.max(0, at - random.nextInt(3 * stride + 8)); // back
              } else if (r < 5) {
                k = all.get(random.nextInt(all.size())); // a random read between
                assertThat(reads.get(k)).isEqualTo(model.get(k));
              } else {
                at += 1 + random.nextInt(stride);
              }
            }
            iteratorReads += reads.iteratorReads();
          }
        }
        assertThat(iteratorReads).isGreaterThan(100_000);
        try (AscendingReads reads = db.ascendingReads(LocalDb.DEFAULT_FAMILY)) {
          for (int n = 0; n < 20_000; n++) { // random: point reads, now and then a run
            byte[] k = all.get(random.nextInt(all.size()));
            assertThat(reads.get(k)).isEqualTo(model.get(k));
          }
        }
      } finally {
        db.close();
      }
    }
  }
}
