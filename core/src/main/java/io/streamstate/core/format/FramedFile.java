package io.streamstate.core.format;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.CRC32C;

/**
 * The frame around every durable file: an 8-byte header, the payload, a 16-byte footer. See {@code
 * docs/format.md}.
 *
 * <pre>
 * header  magic "SSTF" (4) | format version u8 | kind u8 | reserved u16 = 0
 * payload payload-length bytes
 * footer  payload length u64 | CRC32C(header + payload) u32 | magic "FTSS" (4)
 * </pre>
 *
 * <p>Readers verify the whole frame before handing out a single payload byte. A file that fails is
 * reported with {@link CorruptFileException} naming the file and the check that failed; callers
 * decide whether that file may be treated as absent.
 */
public final class FramedFile {
  public static final int HEADER_LENGTH = 8;
  public static final int FOOTER_LENGTH = 16;
  static final byte[] HEADER_MAGIC = {'S', 'S', 'T', 'F'};
  static final byte[] FOOTER_MAGIC = {'F', 'T', 'S', 'S'};

  private FramedFile() {}

  /** The length of the file that frames a payload of {@code payloadLength} bytes. */
  public static long framedLength(long payloadLength) {
    return HEADER_LENGTH + payloadLength + FOOTER_LENGTH;
  }

  /** A verified payload and the format version of the file it came from. */
  public record Payload(int formatVersion, byte[] bytes) {}

  /**
   * The format version this release writes files of {@code kind} in. Version 2 changed only the
   * changelog payload (a codec in front, docs/format.md "Changelog"), which changelog files and
   * segment members carry; every other kind is still written, and only read, in version 1.
   */
  public static int writtenVersion(FileKind kind) {
    return kind == FileKind.CHANGELOG || kind == FileKind.SEGMENT ? 2 : 1;
  }

  /** The newest format version of {@code kind} this release reads (each reads back to 1). */
  static int newestReadable(FileKind kind) {
    return writtenVersion(kind);
  }

  /** A content writer that frames {@code payload}. */
  public static ContentWriter writer(FileKind kind, byte[] payload) {
    return out -> {
      CRC32C crc = new CRC32C();
      byte[] header = header(kind);
      crc.update(header);
      crc.update(payload);
      out.write(header);
      out.write(payload);
      out.write(footer(payload.length, crc.getValue()));
    };
  }

  /** A content writer that frames the bytes of a local file, streaming. */
  public static ContentWriter writer(FileKind kind, Path localFile) {
    return out -> {
      CRC32C crc = new CRC32C();
      byte[] header = header(kind);
      crc.update(header);
      out.write(header);
      long length = 0;
      byte[] buffer = new byte[64 * 1024];
      try (InputStream in = Files.newInputStream(localFile)) {
        int n;
        while ((n = in.read(buffer)) > 0) {
          crc.update(buffer, 0, n);
          out.write(buffer, 0, n);
          length += n;
        }
      }
      out.write(footer(length, crc.getValue()));
    };
  }

  /** The whole framed bytes of {@code payload} (for tests and tools). */
  public static byte[] frame(FileKind kind, byte[] payload) {
    ByteArrayOutputStream out = new ByteArrayOutputStream((int) framedLength(payload.length));
    try {
      writer(kind, payload).writeTo(out);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  /**
   * Reads and verifies a whole file and returns its payload.
   *
   * @throws CorruptFileException the file does not verify
   * @throws UnsupportedException the file verifies but has a format version this release cannot
   *     read
   * @throws MissingFileException the file is absent
   */
  public static byte[] readPayload(Storage storage, String name, FileKind expected) {
    return read(storage, name, expected).bytes();
  }

  /**
   * As {@link #readPayload}, with the file's format version, for kinds whose payload layout depends
   * on it (changelogs and segments).
   */
  public static Payload read(Storage storage, String name, FileKind expected) {
    byte[] bytes;
    try (InputStream in = storage.open(name)) {
      bytes = in.readAllBytes();
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location(storage, name) + ": " + e, e);
    }
    return unframeVersioned(bytes, expected, location(storage, name));
  }

  /**
   * Verifies framed bytes and returns the payload.
   *
   * @param location how to name the file in errors
   */
  public static byte[] unframe(byte[] bytes, FileKind expected, String location) {
    return unframeVersioned(bytes, expected, location).bytes();
  }

  /** As {@link #unframe}, with the file's format version. */
  public static Payload unframeVersioned(byte[] bytes, FileKind expected, String location) {
    if (bytes.length < HEADER_LENGTH + FOOTER_LENGTH) {
      throw new CorruptFileException(
          location
              + " is corrupt: it is "
              + bytes.length
              + " bytes, shorter than a header and"
              + " footer ("
              + (HEADER_LENGTH + FOOTER_LENGTH)
              + " bytes); torn or truncated write?");
    }
    byte[] footer = Arrays.copyOfRange(bytes, bytes.length - FOOTER_LENGTH, bytes.length);
    long payloadLength = checkFooter(footer, bytes.length, location);
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, (int) (HEADER_LENGTH + payloadLength));
    checkCrc(footer, crc.getValue(), location);
    int version = checkHeader(bytes, expected, location);
    return new Payload(
        version, Arrays.copyOfRange(bytes, HEADER_LENGTH, (int) (HEADER_LENGTH + payloadLength)));
  }

  /**
   * Streams the payload of a file to a local file, verifying as it goes; on any failure the local
   * file is deleted, so an unverified payload is never left behind.
   */
  public static void copyPayload(Storage storage, String name, FileKind expected, Path target) {
    String location = location(storage, name);
    try {
      copyPayloadOrThrow(storage, name, expected, target, location);
    } catch (IOException | RuntimeException e) {
      try {
        Files.deleteIfExists(target);
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      if (e instanceof RuntimeException re) {
        throw re;
      }
      throw new RetryableException("Cannot copy " + location + " to " + target + ": " + e, e);
    }
  }

  /**
   * Reads a whole file through, verifying it, without keeping its payload.
   *
   * @throws CorruptFileException the file does not verify
   */
  public static void verify(Storage storage, String name, FileKind expected) {
    verifiedPayloadLength(storage, name, expected);
  }

  /**
   * As {@link #verify}, and returns the length of the payload that verified.
   *
   * @throws CorruptFileException the file does not verify
   */
  public static long verifiedPayloadLength(Storage storage, String name, FileKind expected) {
    String location = location(storage, name);
    try {
      return streamPayload(storage, name, expected, OutputStream.nullOutputStream(), location);
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location + ": " + e, e);
    }
  }

  /**
   * Opens a file and checks its header only, returning a stream at the first payload byte: for
   * formats that protect a prefix of their payload with a checksum of their own (a segment's
   * index), read without reading the whole file. Whoever uses the rest must still verify the whole
   * frame.
   */
  public static InputStream openPayloadPrefix(Storage storage, String name, FileKind expected) {
    String location = location(storage, name);
    InputStream in = storage.open(name);
    try {
      byte[] head = in.readNBytes(HEADER_LENGTH);
      if (head.length < HEADER_LENGTH) {
        throw new CorruptFileException(
            location + " is corrupt: it is " + head.length + " bytes, shorter than a header");
      }
      checkHeader(head, expected, location);
      return in;
    } catch (IOException e) {
      closeQuietly(in);
      throw new RetryableException("Cannot read " + location + ": " + e, e);
    } catch (RuntimeException e) {
      closeQuietly(in);
      throw e;
    }
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException ignored) {
      // reading failed already; that failure is the one to report
    }
  }

  private static void copyPayloadOrThrow(
      Storage storage, String name, FileKind expected, Path target, String location)
      throws IOException {
    long payloadLength;
    try (OutputStream out = Files.newOutputStream(target)) {
      payloadLength = streamPayload(storage, name, expected, out, location);
    }
    if (Files.size(target) != payloadLength) {
      throw new CorruptFileException(location + " is corrupt: payload length mismatch");
    }
  }

  /** Streams the payload to {@code out} and verifies the frame; returns the payload length. */
  private static long streamPayload(
      Storage storage, String name, FileKind expected, OutputStream out, String location)
      throws IOException {
    CRC32C crc = new CRC32C();
    long total = 0;
    byte[] head = new byte[HEADER_LENGTH];
    // Hold back the last FOOTER_LENGTH bytes seen: they may be the footer.
    byte[] tail = new byte[FOOTER_LENGTH];
    int tailLength = 0;
    try (InputStream in = storage.open(name)) {
      int headRead = in.readNBytes(head, 0, HEADER_LENGTH);
      total += headRead;
      if (headRead < HEADER_LENGTH) {
        throw new CorruptFileException(
            location + " is corrupt: it is " + total + " bytes, shorter than a header and footer");
      }
      crc.update(head);
      byte[] buffer = new byte[64 * 1024 + FOOTER_LENGTH];
      int n;
      while ((n = in.read(buffer, tailLength, buffer.length - tailLength)) > 0) {
        total += n;
        System.arraycopy(tail, 0, buffer, 0, tailLength);
        int available = tailLength + n;
        int emit = Math.max(0, available - FOOTER_LENGTH);
        if (emit > 0) {
          crc.update(buffer, 0, emit);
          out.write(buffer, 0, emit);
        }
        tailLength = available - emit;
        System.arraycopy(buffer, emit, tail, 0, tailLength);
      }
    }
    if (tailLength < FOOTER_LENGTH) {
      throw new CorruptFileException(
          location
              + " is corrupt: it is "
              + total
              + " bytes, shorter than a header and footer;"
              + " torn or truncated write?");
    }
    long payloadLength = checkFooter(tail, total, location);
    checkCrc(tail, crc.getValue(), location);
    checkHeader(head, expected, location);
    return payloadLength;
  }

  private static long checkFooter(byte[] footer, long fileLength, String location) {
    if (!Arrays.equals(footer, 12, 16, FOOTER_MAGIC, 0, 4)) {
      throw new CorruptFileException(
          location + " is corrupt: no footer magic at its end; torn or truncated write?");
    }
    long payloadLength = ByteBuffer.wrap(footer, 0, 8).getLong();
    long expectedLength = framedLength(payloadLength);
    if (payloadLength < 0 || expectedLength != fileLength) {
      throw new CorruptFileException(
          location
              + " is corrupt: footer says payload is "
              + payloadLength
              + " bytes, so the file"
              + " should be "
              + expectedLength
              + " bytes, but it is "
              + fileLength);
    }
    return payloadLength;
  }

  private static void checkCrc(byte[] footer, long actual, String location) {
    long stored = ByteBuffer.wrap(footer, 8, 4).getInt() & 0xFFFFFFFFL;
    if (stored != actual) {
      throw new CorruptFileException(
          String.format(
              "%s is corrupt: CRC32C mismatch (stored %08x, computed %08x); bits flipped on"
                  + " storage?",
              location, stored, actual));
    }
  }

  /**
   * Checks a frame's 8-byte header (magic, format version, kind) read on its own, as a reader that
   * steps through a segment journal does; returns the format version.
   *
   * @throws CorruptFileException not a frame of {@code expected}
   * @throws UnsupportedException a newer format version
   */
  public static int checkHeaderBytes(byte[] header, FileKind expected, String location) {
    if (header.length < HEADER_LENGTH) {
      throw new CorruptFileException(location + " is corrupt: its frame header is cut short");
    }
    return checkHeader(header, expected, location);
  }

  /** Checks magic, version and kind; returns the format version. */
  private static int checkHeader(byte[] header, FileKind expected, String location) {
    if (!Arrays.equals(header, 0, 4, HEADER_MAGIC, 0, 4)) {
      throw new CorruptFileException(
          location + " is corrupt: bad header magic; not a streamstate file");
    }
    int version = header[4] & 0xFF;
    FileKind kind = FileKind.fromCode(header[5] & 0xFF);
    // A kind this release knows answers for its own versions; an unknown kind is checked below.
    int newest = newestReadable(kind == null ? expected : kind);
    if (version < 1 || version > newest) {
      throw new UnsupportedException(
          location
              + " has format version "
              + version
              + "; this release reads "
              + (newest == 1 ? "version 1" : "versions 1 to " + newest)
              + ". Was it written by a newer streamstate? Upgrade to read it.");
    }
    if (kind != expected) {
      throw new CorruptFileException(
          location
              + " is corrupt: expected a "
              + expected
              + " file but its header says "
              + (kind == null ? "unknown kind " + (header[5] & 0xFF) : kind.toString()));
    }
    return version;
  }

  private static byte[] header(FileKind kind) {
    return new byte[] {
      HEADER_MAGIC[0],
      HEADER_MAGIC[1],
      HEADER_MAGIC[2],
      HEADER_MAGIC[3],
      (byte) writtenVersion(kind),
      (byte) kind.code(),
      0,
      0
    };
  }

  private static byte[] footer(long payloadLength, long crc) {
    return ByteBuffer.allocate(FOOTER_LENGTH)
        .putLong(payloadLength)
        .putInt((int) crc)
        .put(FOOTER_MAGIC)
        .array();
  }

  /** How errors name a file: the storage's location plus the name. */
  public static String location(Storage storage, String name) {
    String root = storage.describe();
    return root.endsWith("/") ? root + name : root + "/" + name;
  }
}
