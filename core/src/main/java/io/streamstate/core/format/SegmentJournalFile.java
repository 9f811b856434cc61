package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The layout of a segment journal: one file a process appends its group commits to, each a complete
 * framed segment, instead of publishing one segment file each (see {@code docs/format.md}, "Segment
 * journal").
 *
 * <pre>
 * header  magic "SSJL" (4) | format version u8 = 1 | reserved (3) = 0
 * record  framed length u32 | segment id u64 | CRC32C(the 12 bytes before) u32
 *         | a framed SEGMENT file of framed length bytes (header, payload, footer)
 * </pre>
 *
 * <p>A record verifies like the segment file it would otherwise be; its own 16-byte header lets a
 * reader step from record to record without reading the changes. Whatever follows the last record
 * that verifies is the one append that failed or is still in flight: readers stop there, unless a
 * record begins after it ({@link #nextRecordStart}): then the journal was damaged in the middle, an
 * error.
 */
public final class SegmentJournalFile {
  public static final int HEADER_LENGTH = 8;
  public static final int RECORD_HEADER_LENGTH = 16;
  public static final int VERSION = 1;
  private static final byte[] MAGIC = {'S', 'S', 'J', 'L'};

  /** The largest record a reader accepts (a segment's own limit). */
  public static final int MAX_RECORD_LENGTH = Integer.MAX_VALUE - 64;

  private SegmentJournalFile() {}

  /** What a record's own header says. */
  public record RecordHeader(int framedLength, long segmentId) {}

  /** The journal's header, the first bytes of every journal. */
  public static byte[] header() {
    return new byte[] {MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], (byte) VERSION, 0, 0, 0};
  }

  /** One record: its header, then {@code framedSegment} (a whole framed SEGMENT file). */
  public static byte[] record(long segmentId, byte[] framedSegment) {
    ByteBuffer out = ByteBuffer.allocate(RECORD_HEADER_LENGTH + framedSegment.length);
    out.putInt(framedSegment.length).putLong(segmentId);
    CRC32C crc = new CRC32C();
    crc.update(out.array(), 0, 12);
    out.putInt((int) crc.getValue()).put(framedSegment);
    return out.array();
  }

  /**
   * Checks a journal's header.
   *
   * @throws CorruptFileException not a journal
   * @throws UnsupportedException a journal of a newer format version
   */
  public static void checkHeader(byte[] header, String location) {
    if (header.length < HEADER_LENGTH || !Arrays.equals(header, 0, 4, MAGIC, 0, 4)) {
      throw new CorruptFileException(
          location + " is corrupt: bad journal header magic; not a streamstate segment journal");
    }
    int version = header[4] & 0xFF;
    if (version != VERSION) {
      throw new UnsupportedException(
          location
              + " is a segment journal of format version "
              + version
              + "; this release reads version "
              + VERSION
              + ". Was it written by a newer streamstate? Upgrade to read it.");
    }
  }

  /**
   * The offset of the first record that begins after {@code from} in {@code in}, which is
   * positioned at {@code from}, or -1 if none does: an offset whose 16 bytes verify as a record
   * header and are followed by a frame's magic (a false match is about one in 2<sup>64</sup> per
   * offset). Reads to the end of {@code in}, a chunk at a time.
   *
   * <p>Readers ask after a record that does not verify: a writer appends nothing after a failed
   * append, so a record beginning after it means the bytes were damaged after they were written.
   */
  public static long nextRecordStart(InputStream in, long from) throws IOException {
    int window = RECORD_HEADER_LENGTH + 4;
    byte[] buf = new byte[(1 << 20) + window];
    int filled = 0;
    long bufStart = from; // the offset of buf[0]
    boolean first = true;
    while (true) {
      int n = in.readNBytes(buf, filled, buf.length - filled);
      filled += n;
      boolean end = filled < buf.length;
      // Candidates whose window is wholly in the buffer; skip {@code from} itself.
      for (int i = first ? 1 : 0; i + window <= filled; i++) {
        if (Arrays.equals(buf, i + RECORD_HEADER_LENGTH, i + window, FramedFile.HEADER_MAGIC, 0, 4)
            && verifiesAsRecordHeader(buf, i)) {
          return bufStart + i;
        }
      }
      if (end) {
        return -1;
      }
      first = false;
      int keep = window - 1;
      System.arraycopy(buf, filled - keep, buf, 0, keep);
      bufStart += filled - keep;
      filled = keep;
    }
  }

  private static boolean verifiesAsRecordHeader(byte[] bytes, int at) {
    return headerProblem(bytes, at) == null;
  }

  /**
   * Parses a record's 16-byte header.
   *
   * @throws CorruptFileException its checksum or length does not verify: no record starts here
   */
  public static RecordHeader parseRecordHeader(byte[] header, long offset, String location) {
    String problem = headerProblem(header, 0);
    if (problem != null) {
      throw new CorruptFileException(
          location + " is corrupt: the record header at offset " + offset + " " + problem);
    }
    ByteBuffer in = ByteBuffer.wrap(header, 0, RECORD_HEADER_LENGTH);
    return new RecordHeader(in.getInt(), in.getLong());
  }

  /** Why the 16 bytes at {@code at} are not a record header; null if they are one. */
  private static String headerProblem(byte[] bytes, int at) {
    ByteBuffer in = ByteBuffer.wrap(bytes, at, RECORD_HEADER_LENGTH);
    int length = in.getInt();
    in.getLong();
    int stored = in.getInt();
    CRC32C crc = new CRC32C();
    crc.update(bytes, at, 12);
    if ((int) crc.getValue() != stored) {
      return "does not verify";
    }
    if (length < FramedFile.framedLength(0) || length > MAX_RECORD_LENGTH) {
      return "has length " + length;
    }
    return null;
  }
}
