package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The layout of a log journal: one of Spark's metadata logs ({@code offsets/}, {@code commits/})
 * kept in one file the driver appends its entries to, instead of one file per entry (see {@code
 * docs/format.md}, "Log journal"). Not framed as a whole: it grows while it is read.
 *
 * <pre>
 * name    .journal-&lt;epoch, 20 digits&gt; in the log's directory
 * header  magic "SSLJ" (4) | format version u8 = 1 | reserved (3) = 0
 * record  payload length u32 | type u8 (1 put, 2 delete) | batch id u64
 *         | CRC32C(the 13 bytes before and the payload) u32 | payload (the entry; none for delete)
 * </pre>
 *
 * <p>Whatever follows the last record that verifies is the one append that failed or is still in
 * flight: {@link #read} stops there and says why, unless a verified record follows further on,
 * which means the journal was damaged in the middle: an error. A file shorter than the header is a
 * journal just created (no record yet).
 */
public final class LogJournalFile {
  /** The start of every log journal's name. */
  public static final String NAME_PREFIX = ".journal-";

  public static final int HEADER_LENGTH = 8;
  public static final int RECORD_HEADER_LENGTH = 17;
  public static final int VERSION = 1;
  private static final byte[] MAGIC = {'S', 'S', 'L', 'J'};
  private static final byte PUT = 1;
  private static final byte DELETE = 2;

  private LogJournalFile() {}

  /** One record: an entry put (with its bytes) or deleted (no bytes). */
  public record Record(boolean isPut, long batchId, byte[] payload) {}

  /**
   * What a journal holds: its complete records in order, and, if bytes follow the last of them,
   * where and why reading stopped (null when the journal ends with a complete record).
   */
  public record Contents(List<Record> records, long stoppedAt, String stopReason) {}

  /** The name of the journal of {@code epoch}. */
  public static String name(long epoch) {
    return NAME_PREFIX + String.format("%020d", epoch);
  }

  /** Whether {@code name} is a log journal's name. */
  public static boolean isName(String name) {
    return epochOf(name) >= 0;
  }

  /** The epoch of a log journal's name, or -1 if {@code name} is not one. */
  public static long epochOf(String name) {
    if (!name.startsWith(NAME_PREFIX)) {
      return -1;
    }
    try {
      return Long.parseLong(name.substring(NAME_PREFIX.length()));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The journal's header, the first bytes of every journal. */
  public static byte[] header() {
    return new byte[] {MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], (byte) VERSION, 0, 0, 0};
  }

  /** The record that puts entry {@code batchId} with the bytes {@code payload}. */
  public static byte[] put(long batchId, byte[] payload) {
    return record(PUT, batchId, payload);
  }

  /** The record that deletes entry {@code batchId}. */
  public static byte[] delete(long batchId) {
    return record(DELETE, batchId, new byte[0]);
  }

  private static byte[] record(byte type, long batchId, byte[] payload) {
    ByteBuffer b = ByteBuffer.allocate(RECORD_HEADER_LENGTH + payload.length);
    b.putInt(payload.length).put(type).putLong(batchId);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, RECORD_HEADER_LENGTH - 4);
    crc.update(payload);
    b.putInt((int) crc.getValue()).put(payload);
    return b.array();
  }

  /**
   * The records of the journal {@code location} whose bytes are {@code bytes}, up to the first that
   * is incomplete or does not verify.
   *
   * @throws CorruptFileException not a log journal (its magic is wrong), or a record that does not
   *     verify with a verified record after it (damage in the middle), naming {@code location}
   * @throws UnsupportedException a log journal of a newer format version, naming {@code location}
   */
  public static Contents read(byte[] bytes, String location) {
    List<Record> records = new ArrayList<>();
    if (bytes.length < HEADER_LENGTH) {
      return new Contents(records, bytes.length, null); // just created
    }
    if (!Arrays.equals(bytes, 0, 4, MAGIC, 0, 4)) {
      throw new CorruptFileException(
          location + " is corrupt: bad header magic; not a streamstate log journal");
    }
    if (bytes[4] != VERSION) {
      throw new UnsupportedException(
          location
              + " is a log journal of format version "
              + bytes[4]
              + "; this release reads version "
              + VERSION
              + ". Was it written by a newer streamstate? Upgrade to read it.");
    }
    ByteBuffer in = ByteBuffer.wrap(bytes);
    int pos = HEADER_LENGTH;
    while (pos < bytes.length) {
      String bad = problemAt(bytes, pos);
      if (bad != null) {
        return stopped(records, bytes, pos, bad, location);
      }
      int length = in.getInt(pos);
      byte type = in.get(pos + 4);
      int start = pos + RECORD_HEADER_LENGTH;
      records.add(
          new Record(
              type == PUT,
              in.getLong(pos + 5),
              type == PUT ? Arrays.copyOfRange(bytes, start, start + length) : new byte[0]));
      pos = start + length;
    }
    return new Contents(records, pos, null);
  }

  /** Why no complete, verified record starts at {@code pos}; null if one does. */
  private static String problemAt(byte[] bytes, int pos) {
    if (pos + RECORD_HEADER_LENGTH > bytes.length) {
      return "an incomplete record header";
    }
    ByteBuffer in = ByteBuffer.wrap(bytes);
    int length = in.getInt(pos);
    byte type = in.get(pos + 4);
    if (length < 0 || pos + RECORD_HEADER_LENGTH + (long) length > bytes.length) {
      return "an incomplete record (" + length + " payload bytes)";
    }
    CRC32C crc = new CRC32C();
    crc.update(bytes, pos, RECORD_HEADER_LENGTH - 4);
    crc.update(bytes, pos + RECORD_HEADER_LENGTH, length);
    if ((int) crc.getValue() != in.getInt(pos + RECORD_HEADER_LENGTH - 4)) {
      return "a record whose CRC32C does not match";
    }
    if (type != PUT && type != DELETE) {
      return "a record of unknown type " + type;
    }
    return null;
  }

  /**
   * Reading stops at {@code pos}. That is the journal's end only if nothing verifiable follows: a
   * writer appends nothing after a failed append, so a torn record is always the last. A verified
   * record further on means the bytes at {@code pos} were damaged after they were written (a bit
   * flip, a bad disk): an error, never a silent end that would drop every entry after it.
   */
  private static Contents stopped(
      List<Record> records, byte[] bytes, int pos, String reason, String location) {
    for (int next = pos + 1; next + RECORD_HEADER_LENGTH <= bytes.length; next++) {
      byte type = bytes[next + 4];
      if ((type == PUT || type == DELETE) && problemAt(bytes, next) == null) {
        throw new CorruptFileException(
            location
                + " is corrupt: "
                + reason
                + " at offset "
                + pos
                + ", yet a complete record follows at offset "
                + next
                + ": the journal was damaged after it was written, not cut short by a failed"
                + " append, and its entries from offset "
                + pos
                + " on cannot be read ("
                + records.size()
                + " records before it verify)");
      }
    }
    return new Contents(records, pos, reason + " at offset " + pos);
  }
}
