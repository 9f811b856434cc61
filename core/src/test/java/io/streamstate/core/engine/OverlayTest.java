package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * An {@link Overlay} against a sorted map of the same changes (keys as unsigned byte strings, so
 * that keys with bytes above 127 sort as RocksDB sorts them): random puts, deletions and scan
 * deletions, a put over a scan deletion, the first ordered pass at a random step or never (the
 * changes pending until then); after every step the reads agree, and at the end the commit's pass
 * ({@link Overlay#forEachChange}) and the live tree hold the model's changes in the model's order.
 */
class OverlayTest {
  private static final byte[] DELETED = new byte[0]; // the model's tombstone

  @Test
  void changesReadAndCommitAsASortedMapOfThem() {
    for (int seed = 0; seed < 60; seed++) {
      Random random = new Random(seed);
      Overlay overlay = new Overlay(false);
      TreeMap<byte[], byte[]> model = new TreeMap<>(ByteKeys.ORDER);
      int nextScanDeletion = 0;
      // Every third seed: no ordered pass before the commit's (nor any scan deletion).
      boolean neverOrdered = seed % 3 == 0;
      int orderedAt = neverOrdered ? Integer.MAX_VALUE : random.nextInt(400);
      for (int step = 0; step < 400; step++) {
        if (step == orderedAt) {
          // The tree, from the pending changes: the model but its scan deletions, in order.
          assertThat(new ArrayList<>(overlay.ordered().keySet()))
              .as("seed %d step %d", seed, step)
              .containsExactlyElementsOf(
                  model.keySet().stream().filter(k -> k[0] != (byte) 0xff).toList());
        }
        byte[] key = key(random.nextInt(300));
        int op = neverOrdered ? random.nextInt(8) : random.nextInt(10);
        if (op < 6) {
          byte[] value = new byte[] {(byte) step, (byte) (step >> 8)};
          overlay.put(key, value);
          model.put(key, value);
        } else if (op < 8) {
          overlay.put(key, Overlay.TOMBSTONE);
          model.put(key, DELETED);
        } else {
          // A scan deletion: a key greater than every earlier one, not changed here yet.
          byte[] scanned = scanKey(nextScanDeletion);
          nextScanDeletion += 1 + random.nextInt(5);
          assertThat(overlay.appendDeleted(scanned)).isTrue();
          model.put(scanned, DELETED);
        }
        byte[] probe =
            random.nextBoolean()
                ? key(random.nextInt(300))
                : scanKey(random.nextInt(nextScanDeletion + 3));
        assertThat(read(overlay.get(probe)))
            .as("seed %d step %d", seed, step)
            .isEqualTo(model.get(probe));
      }
      // A put over a scan deletion wins over it.
      if (nextScanDeletion > 0) {
        byte[] again = scanKey(0);
        overlay.put(again, new byte[] {7});
        model.put(again, new byte[] {7});
      }
      assertThat(overlay.size()).as("seed %d", seed).isEqualTo(model.size());
      List<byte[]> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      overlay.forEachChange(
          (k, v) -> {
            keys.add(k);
            values.add(read(v));
          });
      assertThat(keys).as("seed %d", seed).containsExactlyElementsOf(model.keySet());
      assertThat(values).as("seed %d", seed).containsExactlyElementsOf(model.values());
      assertOrder(overlay.ordered(), model, "seed " + seed);
    }
  }

  /** The tree holds the model's changes but the scan deletions not put again, in order. */
  private static void assertOrder(
      Map<byte[], byte[]> view, TreeMap<byte[], byte[]> model, String what) {
    List<byte[]> expected = new ArrayList<>();
    for (Map.Entry<byte[], byte[]> e : model.entrySet()) {
      if (ByteKeys.ORDER.compare(e.getKey(), scanKey(0)) <= 0) {
        expected.add(e.getKey());
      }
    }
    assertThat(new ArrayList<>(view.keySet())).as(what).containsExactlyElementsOf(expected);
  }

  private static byte[] read(byte[] change) {
    return change == Overlay.TOMBSTONE ? DELETED : change;
  }

  /** Scan deletions' keys: increasing, above every {@link #key}. */
  private static byte[] scanKey(int n) {
    return new byte[] {(byte) 0xff, (byte) (n >> 8), (byte) n};
  }

  /** Keys of one or two bytes, some above 127 (unsigned order differs from signed there). */
  private static byte[] key(int i) {
    return i < 200 ? new byte[] {(byte) (i + 40)} : new byte[] {(byte) 0xf0, (byte) i};
  }
}
