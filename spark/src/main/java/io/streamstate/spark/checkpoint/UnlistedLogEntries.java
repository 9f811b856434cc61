package io.streamstate.spark.checkpoint;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The newest entries of a Spark metadata log that an object store's listing left out, found by
 * name.
 *
 * <p>An S3-compatible store that is not strongly consistent (AWS S3 is, since 2020; others, and
 * gateways in front of them, may not be) can leave a new object out of listings for a while after
 * its write, while GET and HEAD already see it. Spark reads the latest batch of its logs (offsets,
 * commits, a file source's {@code sources/<i>/}, a file sink's {@code _spark_metadata/}) from a
 * listing. On a restart within the lag it then sees an older latest batch: it plans a batch again
 * that was planned, or fails (a file source's {@code assert(startOffset <= endOffset)}, "assertion
 * failed", when its own log looks older than the offsets that name it).
 *
 * <p>The entries a lagging listing leaves out are always the newest: a log is written in batch
 * order, and each entry lags only for a while after its write. So after a listing whose every name
 * is a batch id ({@code N} or {@code N.compact}), the next ids are asked for by name (one metadata
 * request each; {@code N.compact} too outside the offset and commit logs, which never compact)
 * until one is absent. A listing with any other name is not a log's and is returned as it is.
 */
final class UnlistedLogEntries {
  private static final Logger LOG = LoggerFactory.getLogger(UnlistedLogEntries.class);
  private static final Pattern ENTRY = Pattern.compile("(\\d+)(\\.compact)?");
  private static final String COMPACT = ".compact";

  private UnlistedLogEntries() {}

  /**
   * {@code listed} (the listing of {@code dir} through {@code filter}) with the log entries after
   * its highest batch id that exist, in id order, those that pass {@code filter}. Each id is asked
   * for, filtered or not, until one is absent.
   */
  static FileStatus[] withUnlisted(
      FileSystem fs, Path dir, PathFilter filter, FileStatus[] listed) {
    long highest = -1;
    for (FileStatus f : listed) {
      Matcher m = ENTRY.matcher(f.getPath().getName());
      if (!m.matches()) {
        return listed; // not a log
      }
      highest = Math.max(highest, Long.parseLong(m.group(1)));
    }
    boolean compacts = !SparkLogEntries.isSparkLogEntry(new Path(dir, "0"));
    List<FileStatus> found = new ArrayList<>();
    for (long id = highest + 1; ; id++) {
      FileStatus entry = statusIfPresent(fs, new Path(dir, Long.toString(id)));
      if (entry == null && compacts) {
        entry = statusIfPresent(fs, new Path(dir, id + COMPACT));
      }
      if (entry == null) {
        break;
      }
      if (filter.accept(entry.getPath())) {
        found.add(entry);
      }
    }
    if (found.isEmpty()) {
      return listed;
    }
    LOG.info(
        "Listing {} left out its newest {} entries (the store's listings lag behind writes): {}",
        dir,
        found.size(),
        found.stream().map(f -> f.getPath().getName()).toList());
    List<FileStatus> all = new ArrayList<>(Arrays.asList(listed));
    all.addAll(found);
    return all.toArray(FileStatus[]::new);
  }

  private static FileStatus statusIfPresent(FileSystem fs, Path path) {
    try {
      FileStatus status = fs.getFileStatus(path);
      return status.isFile() ? status : null;
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      throw DirectCreates.sneakyThrow(e);
    }
  }
}
