package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.Options;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksIterator;

class EntryCopierTest {
  @TempDir Path dir;

  /** Sizes around the buffer's first capacity (256) and far beyond it, and an empty value. */
  private static final int[] SIZES = {0, 1, 255, 256, 257, 511, 513, 100_000, 3};

  @Test
  void copiesEveryKeyAndValueWholeIntoItsOwnArray() throws Exception {
    RocksDB.loadLibrary();
    try (Options options = new Options().setCreateIfMissing(true);
        RocksDB db = RocksDB.open(options, dir.toString())) {
      for (int i = 0; i < SIZES.length; i++) {
        db.put(key(i), value(i, SIZES[i]));
      }
      EntryCopier copier = new EntryCopier();
      List<byte[]> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      try (RocksIterator it = db.newIterator()) {
        for (it.seekToFirst(); it.isValid(); it.next()) {
          // Key-sized buffers before and after a large value: each copy must take the whole entry.
          byte[] value = copier.value(it);
          byte[] key = copier.key(it);
          assertThat(key).isEqualTo(it.key());
          assertThat(value).isEqualTo(it.value());
          keys.add(key);
          values.add(value);
        }
      }
      assertThat(keys).hasSize(SIZES.length);
      for (int i = 0; i < SIZES.length; i++) {
        // Earlier copies are untouched by later ones: none shares the reused buffer.
        assertThat(keys.get(i)).as("key %d", i).isEqualTo(key(i));
        assertThat(values.get(i)).as("value %d", i).hasSize(SIZES[i]).isEqualTo(value(i, SIZES[i]));
      }
    }
  }

  private static byte[] key(int i) {
    return String.format("key-%03d", i).getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] value(int i, int size) {
    byte[] value = new byte[size];
    Arrays.fill(value, (byte) (i + 1));
    if (size > 0) {
      value[size - 1] = (byte) 0x7f; // a truncated copy would miss it
    }
    return value;
  }
}
