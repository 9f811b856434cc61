package io.streamstate.core.format;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Appends the primitive encodings of {@code docs/format.md} (varints, length-prefixed bytes). A
 * plain growable array: commits encode every change byte by byte here, and {@code
 * ByteArrayOutputStream} would take a lock per byte.
 */
public final class PayloadWriter {
  private byte[] buf;
  private int size;

  public PayloadWriter(int initialCapacity) {
    this.buf = new byte[Math.max(16, initialCapacity)];
  }

  private void ensure(int more) {
    int needed = size + more;
    if (needed < 0) {
      throw new IllegalStateException("payload larger than 2 GiB");
    }
    if (needed > buf.length) {
      int grown = Math.max(needed, buf.length + (buf.length >> 1));
      buf = Arrays.copyOf(buf, grown < 0 ? Integer.MAX_VALUE - 8 : grown);
    }
  }

  public PayloadWriter writeByte(int b) {
    ensure(1);
    buf[size++] = (byte) b;
    return this;
  }

  /** Unsigned LEB128. */
  public PayloadWriter writeVarLong(long value) {
    if (value < 0) {
      throw new IllegalArgumentException("negative varint " + value);
    }
    ensure(10);
    while ((value & ~0x7FL) != 0) {
      buf[size++] = (byte) ((value & 0x7F) | 0x80);
      value >>>= 7;
    }
    buf[size++] = (byte) value;
    return this;
  }

  public PayloadWriter writeLong(long value) {
    ensure(8);
    for (int shift = 56; shift >= 0; shift -= 8) {
      buf[size++] = (byte) (value >>> shift);
    }
    return this;
  }

  public PayloadWriter writeBytes(byte[] bytes) {
    writeVarLong(bytes.length);
    ensure(bytes.length);
    System.arraycopy(bytes, 0, buf, size, bytes.length);
    size += bytes.length;
    return this;
  }

  /** The bytes as they are, without a length. */
  public PayloadWriter writeRaw(byte[] bytes) {
    ensure(bytes.length);
    System.arraycopy(bytes, 0, buf, size, bytes.length);
    size += bytes.length;
    return this;
  }

  public PayloadWriter writeString(String s) {
    return writeBytes(s.getBytes(StandardCharsets.UTF_8));
  }

  public int size() {
    return size;
  }

  /**
   * The bytes written: the writer's own array when it is exactly full (a writer presized with the
   * exact length copies nothing), else a copy. Nothing may be written afterwards.
   */
  public byte[] toByteArray() {
    return size == buf.length ? buf : Arrays.copyOf(buf, size);
  }

  /** How many bytes {@link #writeVarLong} writes for {@code value} (not negative). */
  public static int varLongSize(long value) {
    int n = 1;
    while ((value & ~0x7FL) != 0) {
      value >>>= 7;
      n++;
    }
    return n;
  }

  /** How many bytes {@link #writeBytes} writes for {@code bytes}. */
  public static int bytesSize(byte[] bytes) {
    return varLongSize(bytes.length) + bytes.length;
  }

  /** How many bytes {@link #writeString} writes for {@code s}. */
  public static int stringSize(String s) {
    return bytesSize(s.getBytes(StandardCharsets.UTF_8));
  }
}
