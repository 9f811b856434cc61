package io.streamstate.dstream.wal;

import java.util.Locale;

/**
 * The names of the write-ahead log's files, relative to its root:
 *
 * <pre>
 * &lt;role&gt;/&lt;writer&gt;/j-&lt;stop&gt;-&lt;n&gt;.wal     a journal (appended to; HDFS, local disk)
 * &lt;role&gt;/&lt;writer&gt;/s-&lt;stop&gt;-&lt;n&gt;[-h].wal  a segment: one group of records, created at once
 *                                        (object stores; {@code -h}: a hedge's copy)
 * </pre>
 *
 * <p>{@code role} is {@code driver} or {@code receiver}; {@code writer} is a process's writer,
 * {@code <start millis, 13 digits>-<random>}, so that writers sort by when they started; {@code
 * stop} (20 digits) is above the time of every record in the file, so {@code clean(threshTime)}
 * deletes the files whose stop is at most threshTime by their names alone.
 */
final class WalNames {
  static final String SUFFIX = ".wal";

  private WalNames() {}

  static String writerDir(String role, String writerId) {
    return role + "/" + writerId + "/";
  }

  static String journal(String writerDir, long stop, long n) {
    return writerDir + String.format(Locale.ROOT, "j-%020d-%06d%s", stop, n, SUFFIX);
  }

  static String segment(String writerDir, long stop, long n, boolean hedge) {
    return writerDir
        + String.format(Locale.ROOT, "s-%020d-%06d%s%s", stop, n, hedge ? "-h" : "", SUFFIX);
  }

  /** The stop time a file's name carries, or -1 if it is not a WAL file's name. */
  static long stopOf(String name) {
    int slash = name.lastIndexOf('/');
    String base = name.substring(slash + 1);
    if (!base.endsWith(SUFFIX)
        || base.length() < 23
        || !(base.startsWith("j-") || base.startsWith("s-"))) {
      return -1;
    }
    try {
      return Long.parseLong(base.substring(2, 22));
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The writer directory of a file's name ({@code role/writer/}), or null. */
  static String writerDirOf(String name) {
    int last = name.lastIndexOf('/');
    return last < 0 ? null : name.substring(0, last + 1);
  }
}
