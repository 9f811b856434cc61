package io.streamstate.dstream.wal;

import org.apache.spark.streaming.util.WriteAheadLogRecordHandle;

/**
 * Where one record of the streamstate write-ahead log is: its file (relative to the log's root
 * directory, {@code spark.streaming.streamstate.writeAheadLog.dir}) and the offset of its record
 * header. Spark keeps handles in its block metadata (and the driver's log) and reads a block back
 * through a log instance of another process, so the handle is all that is needed.
 */
public final class WalRecordHandle extends WriteAheadLogRecordHandle {
  private static final long serialVersionUID = 1L;

  private final String file;
  private final long offset;

  public WalRecordHandle(String file, long offset) {
    this.file = file;
    this.offset = offset;
  }

  public String file() {
    return file;
  }

  public long offset() {
    return offset;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof WalRecordHandle h && h.file.equals(file) && h.offset == offset;
  }

  @Override
  public int hashCode() {
    return file.hashCode() * 31 + Long.hashCode(offset);
  }

  @Override
  public String toString() {
    return "WalRecordHandle(" + file + "@" + offset + ")";
  }
}
