package io.streamstate.dstream.state;

import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.zip.CRC32C;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The markers of completed batches of one state, one small file per version under {@link
 * StateLocation#batchesPrefix()}, each written once with create-if-absent by the driver after the
 * batch completed. The newest marker that verifies is where a (re)started application resumes.
 *
 * <p>Format, version 1 (text, UTF-8, one {@code key=value} a line after the header, then a CRC32C
 * of every byte before the {@code crc32c=} line):
 *
 * <pre>
 * streamstate-dstream-batch 1
 * version=42
 * batchTime=1700000000000
 * commitIds=1f2e...,-5a3b...          (unsigned hex, one per partition, in partition order)
 * crc32c=0a1b2c3d
 * </pre>
 *
 * A file that does not verify (being written, or a torn write of a crashed driver, on storages that
 * show partial files) was never a completed batch: {@link #newest()} skips it, and {@link
 * #newestDeletingTorn()}, at the start of the state's only writer, deletes it.
 */
public final class BatchMarkers {
  private static final Logger LOG = LoggerFactory.getLogger(BatchMarkers.class);
  private static final String HEADER = "streamstate-dstream-batch 1";
  private static final String SUFFIX = ".batch";

  /** Markers kept: older ones are deleted as new ones are written. */
  static final int RETAINED = 100;

  private final Storage storage;
  private final StateLocation location;

  public BatchMarkers(Storage storage, StateLocation location) {
    this.storage = storage;
    this.location = location;
  }

  String fileName(long version) {
    return location.batchesPrefix() + String.format("%020d", version) + SUFFIX;
  }

  /**
   * Publishes the marker of a completed batch. Publishing the same marker twice is a no-op; a
   * different marker of the same version means a second writer of this state, and fails.
   *
   * @throws IllegalStateException another marker of the version exists
   */
  public void write(BatchMarker marker) {
    byte[] bytes = encode(marker);
    String name = fileName(marker.version());
    try {
      storage.create(name, ContentWriter.ofBytes(bytes));
    } catch (FileAlreadyExistsException e) {
      BatchMarker existing = read(name);
      if (!marker.equals(existing)) {
        throw new IllegalStateException(
            "Cannot mark batch version "
                + marker.version()
                + " of state "
                + location.describe()
                + " complete: "
                + name
                + " already exists with other commits (is another application writing this"
                + " state?)",
            e);
      }
      return;
    }
    if (marker.version() > RETAINED) {
      storage.delete(fileName(marker.version() - RETAINED));
    }
  }

  /**
   * The newest marker that verifies, if any; reads only. A newer file that does not verify is
   * skipped: it may be a marker being written right now (local disk and HDFS show a file while it
   * is written).
   */
  public Optional<BatchMarker> newest() {
    return newest(false);
  }

  /**
   * As {@link #newest()}, for the driver that is about to write the state (d1): a newer file that
   * does not verify is a torn write of a driver that died, never a completed batch; it is deleted
   * so that the batch it was meant for can write its marker again. The caller must be the state's
   * only writer.
   */
  public Optional<BatchMarker> newestDeletingTorn() {
    return newest(true);
  }

  private Optional<BatchMarker> newest(boolean deleteTorn) {
    List<FileInfo> files = new ArrayList<>(storage.list(location.batchesPrefix()));
    for (int i = files.size() - 1; i >= 0; i--) {
      String name = files.get(i).name();
      if (!name.endsWith(SUFFIX)) {
        continue;
      }
      try {
        return Optional.of(read(name));
      } catch (CorruptFileException | MissingFileException e) {
        if (deleteTorn) {
          LOG.warn(
              "Batch marker {} of state {} does not verify (a torn write of a driver that died?);"
                  + " deleting it and resuming from the previous one: {}",
              name,
              location.describe(),
              e.getMessage());
          storage.delete(name);
        }
      }
    }
    return Optional.empty();
  }

  /**
   * Reads one marker.
   *
   * @throws CorruptFileException the file does not verify
   * @throws MissingFileException the file is absent
   */
  BatchMarker read(String name) {
    byte[] bytes = Storages.readAll(storage, name);
    try {
      return decode(bytes);
    } catch (RuntimeException e) {
      throw new CorruptFileException(
          "Batch marker " + name + " of state " + location.describe() + ": " + e.getMessage(), e);
    }
  }

  static byte[] encode(BatchMarker marker) {
    StringBuilder body = new StringBuilder();
    body.append(HEADER).append('\n');
    body.append("version=").append(marker.version()).append('\n');
    body.append("batchTime=").append(marker.batchTimeMs()).append('\n');
    body.append("commitIds=");
    long[] ids = marker.commitIds();
    for (int i = 0; i < ids.length; i++) {
      if (i > 0) {
        body.append(',');
      }
      body.append(Long.toHexString(ids[i]));
    }
    body.append('\n');
    byte[] head = body.toString().getBytes(StandardCharsets.UTF_8);
    String crc = String.format("crc32c=%08x\n", crc(head, head.length));
    byte[] tail = crc.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[head.length + tail.length];
    System.arraycopy(head, 0, out, 0, head.length);
    System.arraycopy(tail, 0, out, head.length, tail.length);
    return out;
  }

  static BatchMarker decode(byte[] bytes) {
    String text = new String(bytes, StandardCharsets.UTF_8);
    int crcAt = text.lastIndexOf("crc32c=");
    if (crcAt < 0 || !text.endsWith("\n")) {
      throw new IllegalArgumentException("no checksum line (torn?)");
    }
    int bodyLength = text.substring(0, crcAt).getBytes(StandardCharsets.UTF_8).length;
    long expected = Long.parseLong(text.substring(crcAt + 7, text.length() - 1), 16);
    if (crc(bytes, bodyLength) != expected) {
      throw new IllegalArgumentException("checksum mismatch");
    }
    String[] lines = text.substring(0, crcAt).split("\n");
    if (lines.length != 4 || !lines[0].equals(HEADER)) {
      throw new IllegalArgumentException(
          "unknown format (expected header '" + HEADER + "'): " + lines[0]);
    }
    long version = Long.parseLong(value(lines[1], "version"));
    long time = Long.parseLong(value(lines[2], "batchTime"));
    String[] hex = value(lines[3], "commitIds").split(",");
    long[] ids = new long[hex.length];
    for (int i = 0; i < hex.length; i++) {
      ids[i] = Long.parseUnsignedLong(hex[i], 16);
    }
    return new BatchMarker(version, time, ids);
  }

  private static String value(String line, String key) {
    if (!line.startsWith(key + "=")) {
      throw new IllegalArgumentException("expected " + key + "=..., found " + line);
    }
    return line.substring(key.length() + 1);
  }

  private static long crc(byte[] bytes, int length) {
    CRC32C crc = new CRC32C();
    crc.update(bytes, 0, length);
    return crc.getValue();
  }
}
