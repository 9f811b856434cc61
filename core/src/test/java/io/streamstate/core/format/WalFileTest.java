package io.streamstate.core.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class WalFileTest {
  private static byte[] file(String... payloads) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(WalFile.header());
    for (int i = 0; i < payloads.length; i++) {
      out.writeBytes(WalFile.record(i, 1000 + i, payloads[i].getBytes(StandardCharsets.UTF_8)));
    }
    return out.toByteArray();
  }

  private static String text(WalFile.Record r) {
    return new String(r.payload(), StandardCharsets.UTF_8);
  }

  @Test
  void recordsRoundTripWithSeqTimeAndOffset() {
    byte[] bytes = file("a", "bb", "");
    WalFile.Contents c = WalFile.read(bytes, "f");
    assertThat(c.records()).extracting(WalFileTest::text).containsExactly("a", "bb", "");
    assertThat(c.records()).extracting(WalFile.Record::seq).containsExactly(0L, 1L, 2L);
    assertThat(c.records()).extracting(WalFile.Record::time).containsExactly(1000L, 1001L, 1002L);
    assertThat(c.tornTail()).isFalse();
    WalFile.Record second = c.records().get(1);
    byte[] at =
        Arrays.copyOfRange(
            bytes, (int) second.offset(), (int) second.offset() + WalFile.RECORD_HEADER_LENGTH + 2);
    assertThat(new String(WalFile.payloadOf(at, "f", second.offset()), StandardCharsets.UTF_8))
        .isEqualTo("bb");
  }

  @Test
  void anIncompleteLastRecordIsATornTailEveryCutOfIt() {
    byte[] bytes = file("first", "second");
    int secondStart = WalFile.HEADER_LENGTH + WalFile.RECORD_HEADER_LENGTH + 5;
    for (int cut = secondStart + 1; cut < bytes.length; cut++) {
      WalFile.Contents c = WalFile.read(Arrays.copyOf(bytes, cut), "f");
      assertThat(c.records()).extracting(WalFileTest::text).containsExactly("first");
      assertThat(c.tornTail()).isTrue();
      assertThat(c.validLength()).isEqualTo(secondStart);
    }
  }

  @Test
  void aBadRecordBeforeTheEndIsCorruptionNamingFileAndOffset() {
    byte[] bytes = file("first", "second", "third");
    int secondStart = WalFile.HEADER_LENGTH + WalFile.RECORD_HEADER_LENGTH + 5;
    bytes[secondStart + WalFile.RECORD_HEADER_LENGTH] ^= 1;
    assertThatThrownBy(() -> WalFile.read(bytes, "hdfs://nn/wal/driver/w/j-1.wal"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("hdfs://nn/wal/driver/w/j-1.wal")
        .hasMessageContaining("offset " + secondStart);
  }

  @Test
  void aLengthOutOfRangeIsRefusedBeforeAllocating() {
    byte[] bytes = file("first", "second");
    ByteBuffer.wrap(bytes).putInt(WalFile.HEADER_LENGTH, -5);
    assertThatThrownBy(() -> WalFile.read(bytes, "f"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("record length of " + Integer.toUnsignedString(-5));
  }

  @Test
  void wrongMagicAndNewerVersionAreNamed() {
    byte[] bytes = file("a");
    bytes[0] = 'X';
    assertThatThrownBy(() -> WalFile.read(bytes, "f1"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("f1");
    byte[] newer = file("a");
    newer[4] = 9;
    assertThatThrownBy(() -> WalFile.read(newer, "f2"))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("f2")
        .hasMessageContaining("version 9");
  }
}
