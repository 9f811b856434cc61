package io.streamstate.core.engine.local;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The live-key filters of an instance, written beside the RocksDB files of a checkpoint so that a
 * snapshot carries them (inline in its manifest) and an instance restored from it reads its first
 * batch filtered: without them a restored instance read every miss through RocksDB, on a cold block
 * cache, until its first full scan (issue 21, recovery).
 *
 * <pre>
 *   "SSLK" u32 | format 1 u32 | families u32
 *   per family: name length u32 | name UTF-8 | capacity u64 | keys added u64 | longs u32 | bits
 *   CRC32C of everything before u32
 * </pre>
 *
 * A filter must hold every live key of its family at the checkpoint's version, or a read would miss
 * a key that is there: so it is written under the store's lock with the checkpoint, and a file that
 * does not verify is not used at all (the instance then has no filter, which is always right).
 */
final class LiveKeyFilterFile {
  /** Its name in a checkpoint directory: no RocksDB file is named so. */
  static final String NAME = "streamstate-live-keys";

  private static final int MAGIC = 0x53534c4b; // "SSLK"
  private static final int FORMAT = 1;

  private LiveKeyFilterFile() {}

  /** Writes {@code filters} (family to filter) to {@code file}. */
  static void write(Path file, Map<String, LiveKeyFilter> filters) throws IOException {
    long size = 12 + 4;
    for (Map.Entry<String, LiveKeyFilter> e : filters.entrySet()) {
      size +=
          4 + e.getKey().getBytes(StandardCharsets.UTF_8).length + 20 + e.getValue().sizeBytes();
    }
    ByteBuffer buf = ByteBuffer.allocate(Math.toIntExact(size));
    buf.putInt(MAGIC).putInt(FORMAT).putInt(filters.size());
    for (Map.Entry<String, LiveKeyFilter> e : filters.entrySet()) {
      byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
      LiveKeyFilter f = e.getValue();
      buf.putInt(name.length).put(name).putLong(f.capacity()).putLong(f.added());
      buf.putInt(f.bits().length);
      buf.asLongBuffer().put(f.bits());
      buf.position(buf.position() + f.bits().length * 8);
    }
    CRC32C crc = new CRC32C();
    crc.update(buf.array(), 0, buf.position());
    buf.putInt((int) crc.getValue());
    Files.write(file, buf.array());
  }

  /**
   * Reads the filters in {@code file}.
   *
   * @throws IOException the file cannot be read, or does not verify (the message says how)
   */
  static Map<String, LiveKeyFilter> read(Path file) throws IOException {
    byte[] bytes = Files.readAllBytes(file);
    if (bytes.length < 16) {
      throw new IOException(file + " is corrupt: " + bytes.length + " bytes, too short");
    }
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, bytes.length - 4);
    ByteBuffer buf = ByteBuffer.wrap(bytes);
    if (buf.getInt(bytes.length - 4) != (int) crc.getValue()) {
      throw new IOException(file + " is corrupt: its CRC32C does not match");
    }
    if (buf.getInt() != MAGIC || buf.getInt() != FORMAT) {
      throw new IOException(file + " is not a live-key filter file of format " + FORMAT);
    }
    Map<String, LiveKeyFilter> filters = new LinkedHashMap<>();
    try {
      int count = buf.getInt();
      for (int i = 0; i < count; i++) {
        byte[] name = new byte[checkedLength(buf, buf.getInt(), 1)];
        buf.get(name);
        long capacity = buf.getLong();
        long added = buf.getLong();
        long[] bits = new long[checkedLength(buf, buf.getInt(), 8)];
        buf.asLongBuffer().get(bits);
        buf.position(buf.position() + bits.length * 8);
        filters.put(
            new String(name, StandardCharsets.UTF_8), LiveKeyFilter.of(capacity, added, bits));
      }
    } catch (RuntimeException e) {
      throw new IOException(file + " is corrupt: " + e.getMessage(), e);
    }
    if (buf.remaining() != 4) {
      throw new IOException(file + " is corrupt: " + (buf.remaining() - 4) + " bytes left over");
    }
    return filters;
  }

  /** A length read from the file, bounded by what is left of it before anything is allocated. */
  private static int checkedLength(ByteBuffer buf, int length, int unit) {
    if (length < 0 || (long) length * unit > buf.remaining() - 4) {
      throw new IllegalArgumentException(
          "a length of " + length + " runs past the end at offset " + buf.position());
    }
    return length;
  }
}
