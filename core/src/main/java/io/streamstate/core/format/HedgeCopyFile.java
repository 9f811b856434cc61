package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The hedge copy of one of Spark's log entries ({@code .<N>.hedge} next to the entry {@code N}):
 * the entry's raw bytes followed by a trailer, so that a reader can tell a complete copy from a
 * torn one (see {@code docs/format.md}, "Hedge copy of a Spark log entry"). Not framed with a
 * header: the bytes before the trailer are exactly the entry's.
 *
 * <pre>
 * payload  the entry's bytes
 * trailer  payload length u64 | CRC32C(payload) u32 | magic "SSLH" (4)
 * </pre>
 */
public final class HedgeCopyFile {
  public static final int TRAILER_LENGTH = 16;

  /** The end of every hedge copy's name. */
  public static final String NAME_SUFFIX = ".hedge";

  private static final byte[] MAGIC = {'S', 'S', 'L', 'H'};

  private HedgeCopyFile() {}

  /** The name of the hedge copy of the entry named {@code entryName}. */
  public static String nameOf(String entryName) {
    return "." + entryName + NAME_SUFFIX;
  }

  /** The hedge copy's bytes: the payload, then its trailer. */
  public static byte[] encode(byte[] payload) {
    CRC32C crc = new CRC32C();
    crc.update(payload);
    return ByteBuffer.allocate(payload.length + TRAILER_LENGTH)
        .put(payload)
        .putLong(payload.length)
        .putInt((int) crc.getValue())
        .put(MAGIC)
        .array();
  }

  /**
   * The payload of the complete hedge copy {@code location} whose bytes are {@code bytes}.
   *
   * @throws CorruptFileException not a complete copy (torn or corrupt), naming {@code location} and
   *     the check that failed
   */
  public static byte[] decode(byte[] bytes, String location) {
    String problem = problem(bytes);
    if (problem != null) {
      throw new CorruptFileException(
          location + " is not a complete hedge copy (" + bytes.length + " bytes): " + problem);
    }
    return Arrays.copyOf(bytes, bytes.length - TRAILER_LENGTH);
  }

  /** Why {@code bytes} is not a complete hedge copy, or null if it is one. */
  private static String problem(byte[] bytes) {
    if (bytes.length < TRAILER_LENGTH) {
      return "shorter than its " + TRAILER_LENGTH + "-byte trailer";
    }
    ByteBuffer trailer = ByteBuffer.wrap(bytes, bytes.length - TRAILER_LENGTH, TRAILER_LENGTH);
    long length = trailer.getLong();
    int stored = trailer.getInt();
    byte[] magic = new byte[4];
    trailer.get(magic);
    if (!Arrays.equals(magic, MAGIC)) {
      return "bad trailer magic";
    }
    if (length != bytes.length - TRAILER_LENGTH) {
      return "the trailer names a payload of "
          + length
          + " bytes, the file holds "
          + (bytes.length - TRAILER_LENGTH);
    }
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, (int) length);
    if ((int) crc.getValue() != stored) {
      return "the payload's CRC32C does not match the trailer's";
    }
    return null;
  }
}
