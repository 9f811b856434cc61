package io.streamstate.core.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.CorruptFileException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class HedgeCopyFileTest {
  private static final String WHERE = "hdfs://nn/cp/commits/.7.hedge";

  private static final byte[] ENTRY =
      "v1\n{\"nextBatchWatermarkMs\":0}".getBytes(StandardCharsets.UTF_8);

  @Test
  void roundTripsTheEntryBytesFollowedByTheTrailer() {
    byte[] copy = HedgeCopyFile.encode(ENTRY);

    assertThat(copy).hasSize(ENTRY.length + HedgeCopyFile.TRAILER_LENGTH);
    assertThat(Arrays.copyOf(copy, ENTRY.length)).isEqualTo(ENTRY);
    assertThat(HedgeCopyFile.decode(copy, WHERE)).isEqualTo(ENTRY);
    assertThat(HedgeCopyFile.decode(HedgeCopyFile.encode(new byte[0]), WHERE)).isEmpty();
    assertThat(HedgeCopyFile.nameOf("7")).isEqualTo(".7.hedge");
  }

  @Test
  void everyTruncationIsRefusedNamingTheFileAndWhatIsWrong() {
    byte[] copy = HedgeCopyFile.encode(ENTRY);
    for (int n = 0; n < copy.length; n++) {
      byte[] torn = Arrays.copyOf(copy, n);
      assertThatThrownBy(() -> HedgeCopyFile.decode(torn, WHERE))
          .as("prefix %d", n)
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(WHERE)
          .hasMessageContaining("not a complete hedge copy");
    }
    assertThatThrownBy(() -> HedgeCopyFile.decode(Arrays.copyOf(copy, 3), WHERE))
        .hasMessageContaining("shorter than its 16-byte trailer");
  }

  @Test
  void aFlippedBitAnywhereIsRefusedNamingTheCheckThatFailed() {
    byte[] copy = HedgeCopyFile.encode(ENTRY);
    for (int n = 0; n < copy.length; n++) {
      byte[] flipped = copy.clone();
      flipped[n] ^= 0x10;
      assertThatThrownBy(() -> HedgeCopyFile.decode(flipped, WHERE))
          .as("bit flip at %d", n)
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(WHERE);
    }
    byte[] payloadFlip = copy.clone();
    payloadFlip[0] ^= 1;
    assertThatThrownBy(() -> HedgeCopyFile.decode(payloadFlip, WHERE))
        .hasMessageContaining("CRC32C does not match");
    byte[] magicFlip = copy.clone();
    magicFlip[copy.length - 1] ^= 1;
    assertThatThrownBy(() -> HedgeCopyFile.decode(magicFlip, WHERE))
        .hasMessageContaining("bad trailer magic");
  }
}
