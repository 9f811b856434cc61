package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Reads what {@link PayloadWriter} wrote. A payload that verified its CRC but does not parse (a
 * bug, or a writer of another format) fails with {@link CorruptFileException} naming the file.
 */
public final class PayloadReader {
  private final byte[] bytes;
  private final String location;
  private int pos;

  public PayloadReader(byte[] bytes, String location) {
    this.bytes = bytes;
    this.location = location;
  }

  public int readByte() {
    need(1);
    return bytes[pos++] & 0xFF;
  }

  public long readVarLong() {
    long result = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      int b = readByte();
      result |= (long) (b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        return result;
      }
    }
    throw corrupt("varint longer than 10 bytes");
  }

  /** A varint that must fit an int and be at most {@code max}. */
  public int readVarInt(int max) {
    long v = readVarLong();
    if (v > max) {
      throw corrupt("count or length " + v + " exceeds " + max);
    }
    return (int) v;
  }

  public long readLong() {
    need(8);
    long v = 0;
    for (int i = 0; i < 8; i++) {
      v = (v << 8) | (bytes[pos++] & 0xFF);
    }
    return v;
  }

  public byte[] readBytes() {
    int length = readVarInt(remaining());
    byte[] result = Arrays.copyOfRange(bytes, pos, pos + length);
    pos += length;
    return result;
  }

  public String readString() {
    return new String(readBytes(), StandardCharsets.UTF_8);
  }

  public int remaining() {
    return bytes.length - pos;
  }

  /** Fails unless every byte was consumed. */
  public void expectEnd() {
    if (pos != bytes.length) {
      throw corrupt((bytes.length - pos) + " unexpected trailing bytes");
    }
  }

  public CorruptFileException corrupt(String what) {
    return new CorruptFileException(
        location + " is corrupt: " + what + " at payload offset " + pos);
  }

  private void need(int n) {
    if (bytes.length - pos < n) {
      throw corrupt("payload ends early");
    }
  }
}
