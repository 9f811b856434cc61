package io.streamstate.core.format;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/** Appends the primitive encodings of {@code docs/format.md} (varints, length-prefixed bytes). */
public final class PayloadWriter {
  private final ByteArrayOutputStream out;

  public PayloadWriter(int initialCapacity) {
    this.out = new ByteArrayOutputStream(initialCapacity);
  }

  public PayloadWriter writeByte(int b) {
    out.write(b);
    return this;
  }

  /** Unsigned LEB128. */
  public PayloadWriter writeVarLong(long value) {
    if (value < 0) {
      throw new IllegalArgumentException("negative varint " + value);
    }
    while ((value & ~0x7FL) != 0) {
      out.write((int) ((value & 0x7F) | 0x80));
      value >>>= 7;
    }
    out.write((int) value);
    return this;
  }

  public PayloadWriter writeLong(long value) {
    for (int shift = 56; shift >= 0; shift -= 8) {
      out.write((int) (value >>> shift));
    }
    return this;
  }

  public PayloadWriter writeBytes(byte[] bytes) {
    writeVarLong(bytes.length);
    out.write(bytes, 0, bytes.length);
    return this;
  }

  public PayloadWriter writeString(String s) {
    return writeBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  public int size() {
    return out.size();
  }

  public byte[] toByteArray() {
    return out.toByteArray();
  }
}
