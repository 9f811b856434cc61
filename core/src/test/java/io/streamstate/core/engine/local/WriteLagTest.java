package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.format.Changelog;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The difference a {@link WriteLag} hands RocksDB turns the entries RocksDB holds into the newest
 * ones exactly, with one change per key that differs and none for a key whose value is the same,
 * whether it is the same array or an equal copy.
 */
class WriteLagTest {
  private static byte[] key(int i) {
    return new byte[] {(byte) (i >>> 8), (byte) i};
  }

  private static HeapMirror.Entries entriesOf(TreeMap<byte[], byte[]> map) {
    byte[][] keys = map.keySet().toArray(new byte[0][]);
    byte[][] values = map.values().toArray(new byte[0][]);
    return new HeapMirror.Entries(keys, values, keys.length);
  }

  @Test
  void theDifferenceTurnsWhatRocksDbHoldsIntoTheNewestVersionWithOneChangePerKeyThatDiffers() {
    Random random = new Random(5);
    for (int round = 0; round < 200; round++) {
      TreeMap<byte[], byte[]> from = new TreeMap<>(Arrays::compareUnsigned);
      int range = 1 + random.nextInt(400);
      for (int n = random.nextInt(300); n > 0; n--) {
        from.put(key(random.nextInt(range)), new byte[] {(byte) random.nextInt(4)});
      }
      TreeMap<byte[], byte[]> to = new TreeMap<>(from); // the same arrays, as an apply keeps them
      int differing = 0;
      for (int n = random.nextInt(300); n > 0; n--) {
        byte[] k = key(random.nextInt(range));
        switch (random.nextInt(3)) {
          case 0 -> to.remove(k);
          case 1 -> to.put(k, new byte[] {(byte) random.nextInt(4)}); // often an equal copy
          default -> to.put(k, to.containsKey(k) ? to.get(k) : new byte[] {9});
        }
      }
      for (byte[] k : union(from, to)) {
        if (!Arrays.equals(from.get(k), to.get(k))) {
          differing++;
        }
      }
      List<Changelog.Change> diff = WriteLag.difference(entriesOf(from), entriesOf(to));
      TreeMap<byte[], byte[]> applied = new TreeMap<>(from);
      byte[] previous = null;
      for (Changelog.Change c : diff) {
        if (previous != null) {
          assertThat(Arrays.compareUnsigned(previous, c.key())).as("key order").isNegative();
        }
        previous = c.key();
        if (c.isDelete()) {
          assertThat(applied.remove(c.key())).as("a delete of a key held").isNotNull();
        } else {
          applied.put(c.key(), c.value());
        }
      }
      assertThat(render(applied)).isEqualTo(render(to));
      assertThat(diff).hasSize(differing);
    }
  }

  private static List<byte[]> union(TreeMap<byte[], byte[]> a, TreeMap<byte[], byte[]> b) {
    TreeMap<byte[], Boolean> keys = new TreeMap<>(Arrays::compareUnsigned);
    a.keySet().forEach(k -> keys.put(k, true));
    b.keySet().forEach(k -> keys.put(k, true));
    return new ArrayList<>(keys.keySet());
  }

  private static List<String> render(TreeMap<byte[], byte[]> map) {
    List<String> out = new ArrayList<>();
    for (Map.Entry<byte[], byte[]> e : map.entrySet()) {
      out.add(Arrays.toString(e.getKey()) + "=" + Arrays.toString(e.getValue()));
    }
    return out;
  }
}
