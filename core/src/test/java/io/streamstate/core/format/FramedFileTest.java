package io.streamstate.core.format;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.LocalStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FramedFileTest {
  @TempDir Path tmp;
  LocalStorage storage;

  @BeforeEach
  void setUp() {
    storage = new LocalStorage(tmp.resolve("store"));
  }

  private static byte[] payload(int n, long seed) {
    byte[] b = new byte[n];
    new Random(seed).nextBytes(b);
    return b;
  }

  @Test
  void roundTripsPayloadsOfManySizes() {
    for (int n : new int[] {0, 1, 15, 16, 17, 1000, 70_000, 300_000}) {
      byte[] p = payload(n, n);
      storage.create("f" + n, FramedFile.writer(FileKind.CHANGELOG, p));
      assertThat(FramedFile.readPayload(storage, "f" + n, FileKind.CHANGELOG)).isEqualTo(p);
      Path copy = tmp.resolve("copy" + n);
      FramedFile.copyPayload(storage, "f" + n, FileKind.CHANGELOG, copy);
      assertThat(copy).hasBinaryContent(p);
    }
  }

  @Test
  void streamsLocalFileContent() throws IOException {
    byte[] p = payload(200_000, 7);
    Path src = tmp.resolve("src.sst");
    Files.write(src, p);
    storage.create("x.sst", FramedFile.writer(FileKind.SST, src));
    assertThat(Files.readAllBytes(tmp.resolve("store/x.sst")))
        .isEqualTo(FramedFile.frame(FileKind.SST, p));
  }

  @Test
  void detectsTruncationAtEveryLength() {
    byte[] framed = FramedFile.frame(FileKind.CHANGELOG, payload(100, 1));
    for (int len = 0; len < framed.length; len++) {
      byte[] cut = Arrays.copyOf(framed, len);
      String name = "t" + len;
      storage.create(name, ContentWriter.ofBytes(cut));
      assertThatThrownBy(() -> FramedFile.readPayload(storage, name, FileKind.CHANGELOG))
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(name)
          .hasMessageContaining("corrupt");
      Path target = tmp.resolve("out" + len);
      assertThatThrownBy(() -> FramedFile.copyPayload(storage, name, FileKind.CHANGELOG, target))
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(name);
      assertThat(target).doesNotExist();
    }
  }

  @Test
  void detectsEverySingleBitFlip() {
    byte[] framed = FramedFile.frame(FileKind.SNAPSHOT_MANIFEST, payload(40, 2));
    for (int bit = 0; bit < framed.length * 8; bit++) {
      byte[] flipped = framed.clone();
      flipped[bit / 8] ^= (byte) (1 << (bit % 8));
      String name = "b" + bit;
      storage.create(name, ContentWriter.ofBytes(flipped));
      // A flip in the version byte is caught by the CRC first: every flip is "corrupt".
      assertThatThrownBy(() -> FramedFile.readPayload(storage, name, FileKind.SNAPSHOT_MANIFEST))
          .as("bit %d", bit)
          .isInstanceOf(CorruptFileException.class)
          .hasMessageContaining(name);
    }
  }

  @Test
  void rejectsWrongKindNamingBoth() {
    storage.create("c", FramedFile.writer(FileKind.CHANGELOG, payload(10, 3)));
    assertThatThrownBy(() -> FramedFile.readPayload(storage, "c", FileKind.SST))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("expected a SST file but its header says CHANGELOG");
  }

  @Test
  void rejectsUnknownFormatVersionWithUpgradeAdvice() {
    byte[] p = payload(10, 4);
    byte[] framed = FramedFile.frame(FileKind.CHANGELOG, p);
    framed[4] = 9; // version 9, with a CRC that matches it
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(framed, 0, FramedFile.HEADER_LENGTH + p.length);
    java.nio.ByteBuffer.wrap(framed, framed.length - 8, 4).putInt((int) crc.getValue());
    storage.create("v9", ContentWriter.ofBytes(framed));
    assertThatThrownBy(() -> FramedFile.readPayload(storage, "v9", FileKind.CHANGELOG))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("v9")
        .hasMessageContaining("format version 9")
        .hasMessageContaining("reads versions 1 to 2");
  }

  @Test
  void changelogCodecRoundTrips() {
    Changelog c =
        new Changelog(
            42,
            0x1234_5678_9abc_def0L,
            -7L,
            List.of(new Changelog.FamilyOp(Changelog.FamilyOp.Kind.CREATE, "cf")),
            List.of(
                new Changelog.FamilyChanges(
                    "cf",
                    List.of(
                        new Changelog.Change(new byte[] {1}, new byte[] {2, 3}),
                        new Changelog.Change(new byte[] {4}, null)))));
    Changelog d = Changelog.decode(c.encode(), "x");
    assertThat(d.version()).isEqualTo(42);
    assertThat(d.commitId()).isEqualTo(0x1234_5678_9abc_def0L);
    assertThat(d.parentId()).isEqualTo(-7L);
    assertThat(d.familyOps()).isEqualTo(c.familyOps());
    assertThat(d.changes().get(0).changes().get(0).value()).containsExactly(2, 3);
    assertThat(d.changes().get(0).changes().get(1).isDelete()).isTrue();
  }

  @Test
  void payloadThatDoesNotParseIsCorruptNotGarbage() {
    byte[] bad = {0, 0, 0, 0, 0, 0, 0, 1, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF};
    assertThatThrownBy(() -> Changelog.decode(bad, "file-x"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-x is corrupt");
  }

  /** A changelog of {@code rows} puts of row-like values: mostly zeros, like Spark's rows. */
  private static Changelog rowLike(int rows) {
    List<Changelog.Change> changes = new java.util.ArrayList<>();
    for (int i = 0; i < rows; i++) {
      byte[] key = new byte[24];
      java.nio.ByteBuffer.wrap(key).putLong(8, i);
      byte[] value = new byte[40];
      java.nio.ByteBuffer.wrap(value).putLong(8, i * 31L).putLong(24, 1);
      changes.add(new Changelog.Change(key, i % 10 == 0 ? null : value));
    }
    return new Changelog(
        7, 11, 5, List.of(), List.of(new Changelog.FamilyChanges("default", changes)));
  }

  private static void assertSameChanges(Changelog actual, Changelog expected) {
    assertThat(actual.version()).isEqualTo(expected.version());
    assertThat(actual.commitId()).isEqualTo(expected.commitId());
    assertThat(actual.parentId()).isEqualTo(expected.parentId());
    assertThat(actual.encode()).isEqualTo(expected.encode());
  }

  @Test
  void storedChangelogsRoundTripWithEitherCodecAndVersionOnePayloadsStillDecode() {
    Changelog c = rowLike(2000);
    for (Changelog.Codec codec : Changelog.Codec.values()) {
      assertSameChanges(Changelog.decodeStored(c.encodeStored(codec), 2, "x"), c);
    }
    // Format version 1 held the encoded changes alone.
    assertSameChanges(Changelog.decodeStored(c.encode(), 1, "x"), c);
  }

  @Test
  void aStoredChangelogsHeaderReadsAloneAndItsChangesDecodeLater() {
    Changelog c = rowLike(2000);
    for (Changelog.Codec codec : Changelog.Codec.values()) {
      Changelog.Stored stored = Changelog.readStored(c.encodeStored(codec), 2, "x");
      assertThat(List.of(stored.version(), stored.commitId(), stored.parentId()))
          .as(codec.name())
          .containsExactly(7L, 11L, 5L);
      assertSameChanges(stored.decode(), c);
    }
    Changelog.Stored v1 = Changelog.readStored(c.encode(), 1, "x");
    assertThat(v1.parentId()).isEqualTo(5);
    assertSameChanges(v1.decode(), c);
    // A header cut short is corrupt at once, naming the file.
    byte[] deflated = c.encodeStored(Changelog.Codec.DEFLATE);
    assertThatThrownBy(() -> Changelog.readStored(Arrays.copyOf(deflated, 6), 2, "file-h"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-h");
    // Changes damaged past an intact header: the header reads, the decode fails naming the file.
    byte[] damaged = deflated.clone();
    damaged[damaged.length / 2] ^= 0x5a;
    Changelog.Stored intactHeader = Changelog.readStored(damaged, 2, "file-d");
    assertThat(intactHeader.parentId()).isEqualTo(5);
    assertThatThrownBy(intactHeader::decode)
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-d");
  }

  @Test
  void deflateAndLz4StoreRowLikeChangesInAFractionOfTheBytes() {
    Changelog c = rowLike(2000);
    int encoded = c.encode().length;
    assertThat(c.encodeStored(Changelog.Codec.NONE).length).isBetween(encoded, encoded + 12);
    assertThat(c.encodeStored(Changelog.Codec.DEFLATE).length).isLessThan(encoded / 4);
    assertThat(c.encodeStored(Changelog.Codec.LZ4).length).isLessThan(encoded / 2);
  }

  @Test
  void damagedOrForgedLz4BlocksAreCorruptNamingTheFile() {
    byte[] stored = rowLike(500).encodeStored(Changelog.Codec.LZ4);
    assertThat(stored[0]).isEqualTo((byte) 2);
    byte[] cut = Arrays.copyOf(stored, stored.length - 20);
    assertThatThrownBy(() -> Changelog.decodeStored(cut, 2, "file-c"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-c is corrupt")
        .hasMessageContaining("LZ4 block");
    PayloadReader header = new PayloadReader(stored, "s");
    header.readByte();
    header.readVarLong();
    byte[] block = Arrays.copyOfRange(stored, stored.length - header.remaining(), stored.length);
    // Beyond LZ4's densest output (255:1): refused from the lengths alone.
    byte[] forged = storedWithLength(Changelog.Codec.LZ4, Integer.MAX_VALUE - 64, block);
    assertThatThrownBy(() -> Changelog.decodeStored(forged, 2, "file-l"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-l is corrupt")
        .hasMessageContaining("more than LZ4 can produce");
    // Within that ratio but more than the block holds.
    byte[] tooLong = storedWithLength(Changelog.Codec.LZ4, block.length * 100, block);
    assertThatThrownBy(() -> Changelog.decodeStored(tooLong, 2, "file-m"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-m is corrupt");
    // Shorter than the block holds.
    byte[] tooShort = storedWithLength(Changelog.Codec.LZ4, 100, block);
    assertThatThrownBy(() -> Changelog.decodeStored(tooShort, 2, "file-s"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-s is corrupt");
  }

  @Test
  void damagedCompressedChangesAreCorruptNamingTheFile() {
    byte[] stored = rowLike(500).encodeStored(Changelog.Codec.DEFLATE);
    // The frame's CRC catches damage on storage; these are payloads that pass it (a writer bug or
    // a forged file) and must still never decode as some other changes.
    byte[] flipped = stored.clone();
    flipped[stored.length / 2] ^= 0x5A;
    assertThatThrownBy(() -> Changelog.decodeStored(flipped, 2, "file-f"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-f is corrupt");
    byte[] cut = Arrays.copyOf(stored, stored.length - 20);
    assertThatThrownBy(() -> Changelog.decodeStored(cut, 2, "file-c"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-c is corrupt")
        .hasMessageContaining("inflate");
    byte[] unknown = stored.clone();
    unknown[0] = 7;
    assertThatThrownBy(() -> Changelog.decodeStored(unknown, 2, "file-u"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-u is corrupt")
        .hasMessageContaining("unknown changelog codec 7");
  }

  @Test
  void aForgedInflatedLengthIsCorruptBeforeAnythingThatLargeIsAllocated() {
    byte[] stored = rowLike(500).encodeStored(Changelog.Codec.DEFLATE);
    PayloadReader header = new PayloadReader(stored, "s");
    header.readByte();
    header.readVarLong();
    byte[] deflated = Arrays.copyOfRange(stored, stored.length - header.remaining(), stored.length);
    // Beyond deflate's densest output (1,032:1): refused from the lengths alone.
    byte[] forged = storedWithLength(Changelog.Codec.DEFLATE, Integer.MAX_VALUE - 64, deflated);
    assertThatThrownBy(() -> Changelog.decodeStored(forged, 2, "file-l"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-l is corrupt")
        .hasMessageContaining("more than deflate can produce");
    // Within that ratio but more than the stream holds: inflated as far as it goes, then refused.
    byte[] tooLong = storedWithLength(Changelog.Codec.DEFLATE, deflated.length * 1000, deflated);
    assertThatThrownBy(() -> Changelog.decodeStored(tooLong, 2, "file-m"))
        .isInstanceOf(CorruptFileException.class)
        .hasMessageContaining("file-m is corrupt")
        .hasMessageContaining("inflate to");
  }

  private static byte[] storedWithLength(Changelog.Codec codec, int length, byte[] compressed) {
    PayloadWriter w = new PayloadWriter(16 + compressed.length);
    w.writeByte(codec.code).writeVarLong(length).writeRaw(compressed);
    return w.toByteArray();
  }

  @Test
  void changelogsAndSegmentsAreWrittenInVersionTwoAndOtherKindsInVersionOne() {
    for (FileKind kind : FileKind.values()) {
      byte[] framed = FramedFile.frame(kind, payload(10, 1));
      int expected = kind == FileKind.CHANGELOG || kind == FileKind.SEGMENT ? 2 : 1;
      assertThat(framed[4]).as("format version of %s", kind).isEqualTo((byte) expected);
      assertThat(FramedFile.unframeVersioned(framed, kind, "f").formatVersion())
          .isEqualTo(expected);
    }
  }

  @Test
  void aVersionTwoHeaderOnAKindThatHasOnlyVersionOneIsRefusedAsNewer() {
    byte[] p = payload(10, 4);
    byte[] framed = FramedFile.frame(FileKind.SNAPSHOT_MANIFEST, p);
    framed[4] = 2;
    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
    crc.update(framed, 0, FramedFile.HEADER_LENGTH + p.length);
    java.nio.ByteBuffer.wrap(framed, framed.length - 8, 4).putInt((int) crc.getValue());
    assertThatThrownBy(() -> FramedFile.unframeVersioned(framed, FileKind.SNAPSHOT_MANIFEST, "m2"))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("m2 has format version 2; this release reads version 1");
  }
}
