package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.function.IntFunction;
import org.junit.jupiter.api.Test;

/**
 * {@link ByteKeys#sortedOrder} against a comparison sort with {@link ByteKeys#ORDER}: the keys it
 * puts in order are the comparison sort's, for key shapes that reach each of its paths (prefixes
 * that differ at once, ties resolved one level deeper, keys that are prefixes of others, keys equal
 * for longer than the packed prefixes reach, bytes above 127, small and large runs).
 */
class ByteKeysTest {

  @Test
  void sortsAsTheComparatorDoes() {
    Random random = new Random(42);
    check("random bytes, random lengths", 5_000, i -> bytes(random, random.nextInt(12)));
    check(
        "UnsafeRow-like: 16 shared bytes, a little-endian long",
        20_000,
        i -> row(random.nextInt(1_000_000), 0));
    check(
        "a long key and a second long (many ties on the first)",
        20_000,
        i -> row(random.nextInt(50), random.nextLong()));
    check(
        "keys that are prefixes of one another",
        3_000,
        i -> Arrays.copyOf(new byte[] {5, 0, 0, 7, 0}, random.nextInt(6)));
    check(
        "shared for 40 bytes, then a difference",
        4_000,
        i -> {
          byte[] key = new byte[48];
          Arrays.fill(key, (byte) 0x81);
          key[40 + random.nextInt(8)] = (byte) random.nextInt(256);
          return key;
        });
    check("two keys", 2, i -> new byte[] {(byte) (200 - i)});
    check("none", 0, i -> new byte[0]);
  }

  @Test
  void aPermutationOfTheIndices() {
    byte[][] keys = {{3}, {1}, {2}, {1}};
    int[] order = ByteKeys.sortedOrder(keys, 3); // only the first three are sorted
    assertThat(order).containsExactly(1, 2, 0);
  }

  private static void check(String what, int n, IntFunction<byte[]> keyMaker) {
    byte[][] keys = new byte[n + 3][]; // longer than n, as the pending changes' array
    for (int i = 0; i < n; i++) {
      keys[i] = keyMaker.apply(i);
    }
    int[] order = ByteKeys.sortedOrder(keys, n);
    assertThat(order).as(what).hasSize(n);
    assertThat(Arrays.stream(order).sorted().toArray())
        .as(what)
        .isEqualTo(java.util.stream.IntStream.range(0, n).toArray());
    List<byte[]> expected = new ArrayList<>(Arrays.asList(keys).subList(0, n));
    expected.sort(ByteKeys.ORDER);
    for (int i = 0; i < n; i++) {
      assertThat(keys[order[i]]).as("%s, position %d", what, i).isEqualTo(expected.get(i));
    }
  }

  private static byte[] bytes(Random random, int length) {
    byte[] b = new byte[length];
    random.nextBytes(b);
    return b;
  }

  /** A version byte, an UnsafeRow's null bits and a field, then two longs, little-endian. */
  private static byte[] row(long first, long second) {
    return ByteBuffer.allocate(33)
        .order(ByteOrder.LITTLE_ENDIAN)
        .put((byte) 0)
        .putLong(0)
        .putLong(24)
        .putLong(first)
        .putLong(second)
        .array();
  }
}
