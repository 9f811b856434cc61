package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * The overlay answers every point and ordered question as a sorted map holding the same changes
 * would, whichever way its keys reached their order: merged in bulk, placed a few at a time beside
 * the sorted ones, or still pending behind the bound asked about.
 */
class OverlayTest {
  private static byte[] key(int i) {
    return ByteBuffer.allocate(4).putInt(i).array();
  }

  private static Integer number(byte[] key) {
    return key == null ? null : ByteBuffer.wrap(key).getInt();
  }

  @Test
  void answersAsASortedMapUnderEveryMixOfPutsAndOrderedQuestions() {
    for (int seed = 0; seed < 24; seed++) {
      Random random = new Random(seed);
      Overlay overlay = new Overlay(false);
      TreeMap<Integer, byte[]> model = new TreeMap<>();
      // Seeds differ in how many puts come between questions: bulk loads (merged at once), and
      // single puts among many sorted keys (placed beside them).
      int putsPerQuestion = 1 + random.nextInt(seed % 4 == 0 ? 2_000 : 5);
      int steps = putsPerQuestion > 100 ? 60 : 3_000;
      for (int step = 0; step < steps; step++) {
        for (int p = 0; p < putsPerQuestion; p++) {
          int k = random.nextInt(20_000);
          byte[] value = random.nextInt(4) == 0 ? Overlay.TOMBSTONE : key(step);
          byte[] previous = overlay.put(key(k), value);
          assertThat(previous).isSameAs(model.put(k, value));
        }
        int bound = random.nextInt(20_001);
        assertThat(number(overlay.higherKey(key(bound)))).isEqualTo(model.higherKey(bound));
        assertThat(number(overlay.ceilingKey(key(bound)))).isEqualTo(model.ceilingKey(bound));
        assertThat(number(overlay.ceilingKey(null)))
            .isEqualTo(model.isEmpty() ? null : model.firstKey());
        int probe = random.nextInt(20_000);
        assertThat(overlay.get(key(probe))).isSameAs(model.get(probe));
      }
      assertThat(overlay.size()).isEqualTo(model.size());
      List<Integer> keys = new ArrayList<>();
      List<byte[]> values = new ArrayList<>();
      overlay.forEachInOrder(
          (k, v) -> {
            keys.add(number(k));
            values.add(v);
          });
      assertThat(keys).containsExactlyElementsOf(model.keySet());
      int i = 0;
      for (Map.Entry<Integer, byte[]> e : model.entrySet()) {
        assertThat(values.get(i++)).isSameAs(e.getValue());
      }
    }
  }

  @Test
  void aScanThatDeletesTheKeyItJustReturnedLeavesTheOrderPending() {
    Overlay overlay = new Overlay(false);
    for (int i = 0; i < 1_000; i += 2) {
      overlay.put(key(i), key(i));
    }
    // Spark's eviction: each step deletes the key it is at; the next question is about what
    // follows it, so the deletions wait for the commit's ordered pass.
    byte[] at = overlay.ceilingKey(null);
    List<Integer> seen = new ArrayList<>();
    for (int i = 1; i < 1_000; i += 2) {
      overlay.put(key(i), Overlay.TOMBSTONE);
      byte[] next = overlay.higherKey(key(i));
      seen.add(number(next));
    }
    assertThat(number(at)).isZero();
    assertThat(seen.subList(0, 3)).containsExactly(2, 4, 6);
    List<Integer> all = new ArrayList<>();
    overlay.forEachInOrder((k, v) -> all.add(number(k)));
    assertThat(all).hasSize(1_000).isSorted();
  }
}
