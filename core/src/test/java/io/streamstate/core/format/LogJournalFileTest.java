package io.streamstate.core.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

class LogJournalFileTest {
  private static final String WHERE = "hdfs://nn/cp/offsets/.journal-00000000000000000003";

  private static byte[] entry(long id) {
    return ("v1\n{\"batch\":" + id + "}").getBytes(StandardCharsets.UTF_8);
  }

  private static byte[] journal() {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    out.writeBytes(LogJournalFile.header());
    out.writeBytes(LogJournalFile.put(0, entry(0)));
    out.writeBytes(LogJournalFile.put(1, entry(1)));
    out.writeBytes(LogJournalFile.delete(0));
    out.writeBytes(LogJournalFile.put(2, new byte[0]));
    return out.toByteArray();
  }

  @Test
  void roundTripsPutsAndDeletesInOrder() {
    LogJournalFile.Contents contents = LogJournalFile.read(journal(), WHERE);

    assertThat(contents.stopReason()).isNull();
    assertThat(contents.stoppedAt()).isEqualTo(journal().length);
    assertThat(contents.records()).hasSize(4);
    assertThat(contents.records().get(0).isPut()).isTrue();
    assertThat(contents.records().get(0).batchId()).isZero();
    assertThat(contents.records().get(0).payload()).isEqualTo(entry(0));
    assertThat(contents.records().get(1).payload()).isEqualTo(entry(1));
    assertThat(contents.records().get(2).isPut()).isFalse();
    assertThat(contents.records().get(2).batchId()).isZero();
    assertThat(contents.records().get(3).payload()).isEmpty();
  }

  @Test
  void aJournalShorterThanItsHeaderIsOneJustCreated() {
    assertThat(LogJournalFile.read(new byte[0], WHERE).records()).isEmpty();
    assertThat(LogJournalFile.read(Arrays.copyOf(LogJournalFile.header(), 5), WHERE).records())
        .isEmpty();
  }

  @Test
  void readingStopsAtATruncatedOrCorruptLastRecordAndSaysWhere() {
    byte[] whole = journal();
    int lastStart = whole.length - LogJournalFile.RECORD_HEADER_LENGTH;
    for (int cut = lastStart + 1; cut < whole.length; cut++) {
      LogJournalFile.Contents torn = LogJournalFile.read(Arrays.copyOf(whole, cut), WHERE);
      assertThat(torn.records()).as("cut at %d", cut).hasSize(3);
      assertThat(torn.stopReason()).contains("incomplete").contains("offset " + lastStart);
    }
    byte[] flipped = whole.clone();
    flipped[lastStart + 3] ^= 1;
    LogJournalFile.Contents corrupt = LogJournalFile.read(flipped, WHERE);
    assertThat(corrupt.records()).hasSize(3);
    assertThat(corrupt.stopReason()).contains("offset " + lastStart);
  }

  @Test
  void aRecordDamagedInTheMiddleIsAnErrorNamingTheFileNotTheJournalsEnd() {
    byte[] whole = journal();
    int first = LogJournalFile.HEADER_LENGTH;
    int second = first + LogJournalFile.put(0, entry(0)).length;
    // A flipped payload byte (the CRC fails) and a flipped length byte (the record seems to run
    // past the end of the file): complete records follow either way.
    for (int at : new int[] {first + LogJournalFile.RECORD_HEADER_LENGTH + 3, first + 2}) {
      byte[] flipped = whole.clone();
      flipped[at] ^= 1;
      assertThatThrownBy(() -> LogJournalFile.read(flipped, WHERE))
          .as("bit flipped at %d", at)
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(WHERE)
          .hasMessageContaining("at offset " + first)
          .hasMessageContaining("a complete record follows at offset " + second)
          .hasMessageContaining("damaged after it was written");
    }
  }

  @Test
  void aBadMagicOrANewerVersionIsRefusedNamingTheFile() {
    byte[] badMagic = journal();
    badMagic[0] = 'X';
    assertThatThrownBy(() -> LogJournalFile.read(badMagic, WHERE))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining(WHERE)
        .hasMessageContaining("bad header magic");
    byte[] newer = journal();
    newer[4] = 2;
    assertThatThrownBy(() -> LogJournalFile.read(newer, WHERE))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining(WHERE)
        .hasMessageContaining("format version 2");
  }

  @Test
  void namesCarryTheEpochIn20Digits() {
    assertThat(LogJournalFile.name(3)).isEqualTo(".journal-00000000000000000003");
    assertThat(LogJournalFile.epochOf(LogJournalFile.name(42))).isEqualTo(42);
    assertThat(LogJournalFile.isName(".journal-x")).isFalse();
    assertThat(LogJournalFile.isName("3")).isFalse();
  }
}
