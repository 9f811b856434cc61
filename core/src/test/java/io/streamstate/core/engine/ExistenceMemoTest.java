package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** {@link ExistenceMemo} against a map of the same answers. */
class ExistenceMemoTest {
  private static byte[] key(int i, int length) {
    ByteBuffer b = ByteBuffer.allocate(length);
    b.putInt(0, i);
    return b.array();
  }

  @Test
  void answersAsAMapOfTheRememberedKeysDoes() {
    Random random = new Random(11);
    ExistenceMemo memo = new ExistenceMemo(1 << 20);
    Map<ByteBuffer, Boolean> model = new HashMap<>();
    for (int op = 0; op < 200_000; op++) {
      // Keys of several lengths, many shared prefixes (as state keys): 4-byte ids padded.
      byte[] k = key(random.nextInt(50_000), 4 + random.nextInt(3) * 20);
      if (random.nextBoolean()) {
        boolean exists = random.nextBoolean();
        memo.remember(k, exists);
        model.put(ByteBuffer.wrap(k.clone()), exists);
      } else {
        Boolean expected = model.get(ByteBuffer.wrap(k));
        int expectedAnswer =
            expected == null
                ? ExistenceMemo.UNKNOWN
                : expected ? ExistenceMemo.PRESENT : ExistenceMemo.ABSENT;
        assertThat(memo.lookUp(k)).as("op %d", op).isEqualTo(expectedAnswer);
      }
    }
    assertThat(memo.size()).isEqualTo(model.size());
  }

  @Test
  void keepsACopyOfTheKey() {
    ExistenceMemo memo = new ExistenceMemo(10);
    byte[] k = {1, 2, 3};
    memo.remember(k, true);
    k[0] = 9; // the caller reuses its buffer
    assertThat(memo.lookUp(new byte[] {1, 2, 3})).isEqualTo(ExistenceMemo.PRESENT);
    assertThat(memo.lookUp(k)).isEqualTo(ExistenceMemo.UNKNOWN);
  }

  @Test
  void remembersNoMoreKeysThanItsCap() {
    ExistenceMemo memo = new ExistenceMemo(3);
    for (int i = 0; i < 5; i++) {
      memo.remember(key(i, 8), true);
    }
    assertThat(memo.size()).isEqualTo(3);
    assertThat(memo.lookUp(key(4, 8))).isEqualTo(ExistenceMemo.UNKNOWN);
    assertThat(memo.lookUp(key(0, 8))).isEqualTo(ExistenceMemo.PRESENT);
  }
}
