package io.streamstate.core.engine.segment;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.format.Segment;
import io.streamstate.core.format.SegmentJournalFile;
import io.streamstate.core.storage.Storage;
import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Reads segment journals ({@link SegmentJournalFile}): steps through each journal's records once,
 * reading only their headers and segment indexes, and remembers how far it got, so that a journal
 * another process is still appending to is read on from there the next time. One per {@link
 * SegmentCatalog}.
 *
 * <pre>
 * _segments/&lt;close-by millis&gt;-&lt;journal id&gt;.journal         a journal file
 * _segments/&lt;close-by millis&gt;-&lt;journal id&gt;.journal@&lt;offset&gt; one record in it (a name
 *                                                           only the catalog uses)
 * </pre>
 *
 * The close-by time in the name is when its writer stops appending: the sweep never deletes a
 * journal before that time plus the torn-file grace period.
 */
final class SegmentJournalReader {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentJournalReader.class);

  static final String SUFFIX = ".journal";
  private static final String RECORD_MARK = SUFFIX + "@";

  /** A journal file name, parsed. */
  record JournalName(String name, long closeByMillis, long journalId) {}

  /** One record found in a journal. */
  record Record(String name, long offset, long segmentId, Segment.Index index) {}

  /** How far one journal has been read, and what was found. Guarded by its own monitor. */
  private static final class Scan {
    long scannedTo;
    boolean ended;
    final List<Record> records = new ArrayList<>();
  }

  private final Storage storage;
  private final Map<String, Scan> scans = new ConcurrentHashMap<>();

  SegmentJournalReader(Storage storage) {
    this.storage = storage;
  }

  static String journalName(long closeByMillis, long journalId) {
    return SegmentCatalog.SEGMENT_DIR
        + String.format("%020d", closeByMillis)
        + "-"
        + HexFormat.of().toHexDigits(journalId)
        + SUFFIX;
  }

  /** Parses a journal's file name (with or without directories); null if it is not one. */
  static JournalName parseJournal(String name) {
    String base = name.substring(name.lastIndexOf('/') + 1);
    if (!base.endsWith(SUFFIX)) {
      return null;
    }
    long[] parsed =
        StoreLayout.parseVersionAndId(base.substring(0, base.length() - SUFFIX.length()));
    return parsed == null ? null : new JournalName(name, parsed[0], parsed[1]);
  }

  static String recordName(String journal, long offset) {
    return journal + "@" + String.format("%020d", offset);
  }

  /** Whether {@code name} names a record in a journal rather than a file. */
  static boolean isRecord(String name) {
    return name.contains(RECORD_MARK);
  }

  /** The journal a record name lies in. */
  static String journalOf(String recordName) {
    return recordName.substring(0, recordName.indexOf(RECORD_MARK) + SUFFIX.length());
  }

  private static long offsetOf(String recordName) {
    return Long.parseLong(
        recordName.substring(recordName.indexOf(RECORD_MARK) + RECORD_MARK.length()));
  }

  /** How errors name a record: its journal and offset. */
  String location(String recordName) {
    return FramedFile.location(storage, journalOf(recordName))
        + " (record at offset "
        + offsetOf(recordName)
        + ")";
  }

  /**
   * The complete records of journal {@code name}, reading on from where the last call stopped.
   * Stops at the first bytes that are not (yet) a complete record: an append in flight, or the one
   * that failed.
   *
   * @throws UnsupportedException a journal or segment of a newer format
   * @throws RetryableException reading failed
   */
  List<Record> records(String name) {
    Scan scan = scans.computeIfAbsent(name, n -> new Scan());
    synchronized (scan) {
      if (!scan.ended) {
        readOn(name, scan);
      }
      return List.copyOf(scan.records);
    }
  }

  /** Drops what is known of a deleted journal. */
  void forget(String name) {
    scans.remove(name);
  }

  private void readOn(String name, Scan scan) {
    String location = FramedFile.location(storage, name);
    try (InputStream in = storage.open(name)) {
      long pos = scan.scannedTo;
      if (pos == 0) {
        byte[] head = in.readNBytes(SegmentJournalFile.HEADER_LENGTH);
        if (head.length < SegmentJournalFile.HEADER_LENGTH) {
          return; // just created: its header is not durable yet
        }
        try {
          SegmentJournalFile.checkHeader(head, location);
        } catch (CorruptFileException e) {
          LOG.warn("Ignoring {}", e.getMessage());
          scan.ended = true;
          return;
        }
        pos = SegmentJournalFile.HEADER_LENGTH;
        scan.scannedTo = pos;
      } else if (!skipFully(in, pos)) {
        return;
      }
      while (true) {
        byte[] header = in.readNBytes(SegmentJournalFile.RECORD_HEADER_LENGTH);
        if (header.length < SegmentJournalFile.RECORD_HEADER_LENGTH) {
          return; // nothing more yet
        }
        Record record;
        try {
          record = readRecordIndex(in, name, pos, header, location);
        } catch (CorruptFileException e) {
          // Only the last append can be torn (a writer stops at its first failure): the end,
          // unless a record begins after it.
          failIfARecordFollows(name, pos, e);
          LOG.debug("Journal {} ends at offset {}: {}", location, pos, e.getMessage());
          scan.ended = true;
          return;
        }
        if (record == null) {
          return; // the record is not complete yet
        }
        scan.records.add(record);
        pos = record.offset() + SegmentJournalFile.RECORD_HEADER_LENGTH + framedLength(header);
        scan.scannedTo = pos;
      }
    } catch (MissingFileException gone) {
      scan.ended = true; // deleted by a sweep
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + location + ": " + e, e);
    }
  }

  /**
   * Throws if a record begins after the one at {@code offset} that does not verify ({@code bad}):
   * the journal was damaged in the middle, and ending it there would silently drop the commits
   * after it.
   */
  private void failIfARecordFollows(String name, long offset, CorruptFileException bad)
      throws IOException {
    long next;
    try (InputStream in = storage.open(name)) {
      if (!skipFully(in, offset)) {
        return;
      }
      next = SegmentJournalFile.nextRecordStart(in, offset);
    }
    if (next >= 0) {
      throw new CorruptFileException(
          bad.getMessage()
              + "; yet a record begins at offset "
              + next
              + ": the journal was damaged after it was written, not cut short by a failed"
              + " append, and the commits in it from offset "
              + offset
              + " on cannot be read",
          bad);
    }
  }

  private static int framedLength(byte[] recordHeader) {
    return ByteBuffer.wrap(recordHeader).getInt();
  }

  /**
   * Reads one record's frame header and segment index and skips its members; null if the record is
   * not complete yet.
   */
  private Record readRecordIndex(
      InputStream in, String journal, long offset, byte[] header, String location)
      throws IOException {
    SegmentJournalFile.RecordHeader h =
        SegmentJournalFile.parseRecordHeader(header, offset, location);
    String where = location + " (record at offset " + offset + ")";
    byte[] frameHeader = in.readNBytes(FramedFile.HEADER_LENGTH);
    if (frameHeader.length < FramedFile.HEADER_LENGTH) {
      return null;
    }
    FramedFile.checkHeaderBytes(frameHeader, FileKind.SEGMENT, where);
    byte[] indexLength = in.readNBytes(4);
    if (indexLength.length < 4) {
      return null;
    }
    int length = ByteBuffer.wrap(indexLength).getInt();
    long consumed = FramedFile.HEADER_LENGTH + 4L + length + 4;
    if (length < 0 || consumed + FramedFile.FOOTER_LENGTH > h.framedLength()) {
      throw new CorruptFileException(where + " is corrupt: segment index length " + length);
    }
    byte[] rest = in.readNBytes(length + 4);
    if (rest.length < length + 4) {
      return null;
    }
    ByteArrayInputStream indexBytes =
        new ByteArrayInputStream(
            ByteBuffer.allocate(4 + rest.length).put(indexLength).put(rest).array());
    Segment.Index index = Segment.readIndex(indexBytes, where);
    if (!skipFully(in, h.framedLength() - consumed)) {
      return null;
    }
    return new Record(recordName(journal, offset), offset, h.segmentId(), index);
  }

  /**
   * Skips {@code n} bytes, false if the stream ends first. Reads the last byte rather than skipping
   * it: some streams skip past their end without saying so.
   */
  private static boolean skipFully(InputStream in, long n) throws IOException {
    if (n <= 0) {
      return true;
    }
    try {
      in.skipNBytes(n - 1);
    } catch (EOFException e) {
      return false;
    }
    return in.read() >= 0;
  }

  /**
   * Reads and verifies one whole record.
   *
   * @throws CorruptFileException the record does not verify (torn, or no record at that offset)
   * @throws MissingFileException the journal is gone
   */
  FramedFile.Payload readRecord(String recordName) {
    String journal = journalOf(recordName);
    long offset = offsetOf(recordName);
    String where = location(recordName);
    try (InputStream in = storage.open(journal)) {
      if (!skipFully(in, offset)) {
        throw new CorruptFileException(where + " is corrupt: the journal ends before the record");
      }
      byte[] header = in.readNBytes(SegmentJournalFile.RECORD_HEADER_LENGTH);
      if (header.length < SegmentJournalFile.RECORD_HEADER_LENGTH) {
        throw new CorruptFileException(where + " is corrupt: the record is cut short");
      }
      SegmentJournalFile.RecordHeader h =
          SegmentJournalFile.parseRecordHeader(
              header, offset, FramedFile.location(storage, journal));
      byte[] framed = in.readNBytes(h.framedLength());
      if (framed.length < h.framedLength()) {
        throw new CorruptFileException(where + " is corrupt: the record is cut short");
      }
      return FramedFile.unframeVersioned(framed, FileKind.SEGMENT, where);
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + where + ": " + e, e);
    }
  }
}
