package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.UnsupportedException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * The layout of a write-ahead log file of Spark Streaming (the dstream module's {@code
 * WriteAheadLog}): a journal its writer appends records to, or a segment holding one group of
 * records written at once (object stores, hedge copies). Both have the same layout (see {@code
 * docs/format.md}, "Write-ahead log").
 *
 * <pre>
 * header  magic "SSWA" (4) | format version u8 = 1 | reserved (3) = 0
 * record  payload length u32 | sequence number u64 | time u64
 *         | CRC32C(the 20 bytes before and the payload) u32 | payload
 * </pre>
 *
 * <p>Sequence numbers are unique per writer and grow in write order: a reader that finds one record
 * twice (a late journal append and its hedge copy) keeps one. A journal's tail may be the one
 * append that failed or is still in flight: an incomplete record that reaches the end of the file.
 * Anything else that does not verify, a record that fails its CRC with bytes after it, or a length
 * beyond {@link #MAX_PAYLOAD}, is corruption, reported naming the file and the offset; reading
 * never silently ends early.
 */
public final class WalFile {
  public static final int HEADER_LENGTH = 8;
  public static final int RECORD_HEADER_LENGTH = 24;
  public static final int VERSION = 1;

  /** The largest payload accepted, well below the 2 GiB an array holds: a length past it is bad. */
  public static final int MAX_PAYLOAD = 1 << 30;

  private static final byte[] MAGIC = {'S', 'S', 'W', 'A'};

  private WalFile() {}

  /** One record: its writer's sequence number, the time Spark gave it, and its bytes. */
  public record Record(long seq, long time, byte[] payload, long offset) {}

  /**
   * A file's complete records in order, and, when its last bytes are an incomplete record, where it
   * starts (else the file's length).
   */
  public record Contents(List<Record> records, long validLength, boolean tornTail) {}

  /** The header every WAL file starts with. */
  public static byte[] header() {
    return new byte[] {MAGIC[0], MAGIC[1], MAGIC[2], MAGIC[3], (byte) VERSION, 0, 0, 0};
  }

  /** The bytes of one record. */
  public static byte[] record(long seq, long time, byte[] payload) {
    if (payload.length > MAX_PAYLOAD) {
      throw new IllegalArgumentException(
          "A write-ahead log record holds at most " + MAX_PAYLOAD + " bytes: " + payload.length);
    }
    ByteBuffer b = ByteBuffer.allocate(RECORD_HEADER_LENGTH + payload.length);
    b.putInt(payload.length).putLong(seq).putLong(time);
    CRC32C crc = new CRC32C();
    crc.update(b.array(), 0, RECORD_HEADER_LENGTH - 4);
    crc.update(payload);
    b.putInt((int) crc.getValue()).put(payload);
    return b.array();
  }

  /**
   * The records of the file {@code location} whose bytes are {@code bytes}.
   *
   * @throws CorruptFileException not a WAL file, or a record that does not verify before the end
   * @throws UnsupportedException a newer format version
   */
  public static Contents read(byte[] bytes, String location) {
    List<Record> records = new ArrayList<>();
    if (bytes.length < HEADER_LENGTH) {
      return new Contents(records, 0, bytes.length > 0); // just created
    }
    checkHeader(bytes, location);
    ByteBuffer in = ByteBuffer.wrap(bytes);
    int pos = HEADER_LENGTH;
    while (pos < bytes.length) {
      if (pos + RECORD_HEADER_LENGTH > bytes.length) {
        return new Contents(records, pos, true);
      }
      int length = in.getInt(pos);
      if (length < 0 || length > MAX_PAYLOAD) {
        throw corrupt(location, pos, "a record length of " + Integer.toUnsignedString(length));
      }
      long end = pos + RECORD_HEADER_LENGTH + (long) length;
      if (end > bytes.length) {
        return new Contents(records, pos, true);
      }
      if (!verifies(bytes, pos, length)) {
        if (end == bytes.length) {
          // The last append, torn: its bytes arrived in part. Never acknowledged to a writer.
          return new Contents(records, pos, true);
        }
        throw corrupt(location, pos, "a record whose CRC32C does not match");
      }
      records.add(
          new Record(
              in.getLong(pos + 4),
              in.getLong(pos + 12),
              Arrays.copyOfRange(bytes, pos + RECORD_HEADER_LENGTH, (int) end),
              pos));
      pos = (int) end;
    }
    return new Contents(records, pos, false);
  }

  /**
   * The payload of the record at {@code offset}, from {@code recordBytes}: its header and payload
   * exactly ({@link #RECORD_HEADER_LENGTH} + payload length bytes, read from the file at that
   * offset).
   *
   * @throws CorruptFileException the bytes are not a complete record that verifies
   */
  public static byte[] payloadOf(byte[] recordBytes, String location, long offset) {
    if (recordBytes.length < RECORD_HEADER_LENGTH) {
      throw corrupt(location, offset, "a record cut short (" + recordBytes.length + " bytes)");
    }
    int length = ByteBuffer.wrap(recordBytes).getInt(0);
    if (length < 0 || RECORD_HEADER_LENGTH + (long) length != recordBytes.length) {
      throw corrupt(
          location,
          offset,
          "a record of length "
              + Integer.toUnsignedString(length)
              + " where "
              + (recordBytes.length - RECORD_HEADER_LENGTH)
              + " payload bytes were expected");
    }
    if (!verifies(recordBytes, 0, length)) {
      throw corrupt(location, offset, "a record whose CRC32C does not match");
    }
    return Arrays.copyOfRange(recordBytes, RECORD_HEADER_LENGTH, recordBytes.length);
  }

  private static boolean verifies(byte[] bytes, int pos, int length) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, pos, RECORD_HEADER_LENGTH - 4);
    crc.update(bytes, pos + RECORD_HEADER_LENGTH, length);
    return (int) crc.getValue() == ByteBuffer.wrap(bytes).getInt(pos + RECORD_HEADER_LENGTH - 4);
  }

  private static void checkHeader(byte[] bytes, String location) {
    if (!Arrays.equals(bytes, 0, 4, MAGIC, 0, 4)) {
      throw new CorruptFileException(
          location + " is corrupt: bad header magic; not a streamstate write-ahead log file");
    }
    if (bytes[4] != VERSION) {
      throw new UnsupportedException(
          location
              + " is a write-ahead log file of format version "
              + bytes[4]
              + "; this release reads version "
              + VERSION
              + ". Was it written by a newer streamstate? Upgrade to read it.");
    }
  }

  private static CorruptFileException corrupt(String location, long offset, String what) {
    return new CorruptFileException(
        location + " is corrupt: " + what + " at offset " + offset + " (write-ahead log file)");
  }
}
