package io.streamstate.hadoop;

import java.lang.reflect.Method;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;

/**
 * HDFS's file ids (inode ids), which tell a file from another one later created or renamed at the
 * same name: what a withdraw checks before it deletes by name. Read through the public {@code
 * getFileId()} of HDFS's stream and status classes, by reflection, so that this module loads where
 * HDFS's client classes are absent; {@link #UNKNOWN} on other stores.
 */
final class FileIds {
  /** No id: the store has none (not HDFS). */
  static final long UNKNOWN = -1;

  private FileIds() {}

  /** The id of the file {@code out} writes (HDFS: its {@code DFSOutputStream}'s), or unknown. */
  static long of(FSDataOutputStream out) {
    // FSDataOutputStream > HdfsDataOutputStream's wrapped (CryptoOutputStream >) DFSOutputStream
    Object stream = out;
    for (int depth = 0; depth < 4 && stream != null; depth++) {
      long id = invokeFileId(stream);
      if (id != UNKNOWN) {
        return id;
      }
      stream = invoke(stream, "getWrappedStream");
    }
    return UNKNOWN;
  }

  /** The id of the file {@code status} describes (HDFS's statuses carry it), or unknown. */
  static long of(FileStatus status) {
    return invokeFileId(status);
  }

  private static long invokeFileId(Object o) {
    Object id = invoke(o, "getFileId");
    return id instanceof Long l ? l : UNKNOWN;
  }

  private static Object invoke(Object o, String method) {
    try {
      Method m = o.getClass().getMethod(method);
      return m.invoke(o);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }
}
