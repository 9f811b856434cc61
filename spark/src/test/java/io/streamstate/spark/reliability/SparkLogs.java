package io.streamstate.spark.reliability;

import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;

/**
 * Spark's logs in a run's checkpoint (offsets, commits, file sources' logs), read as text through
 * our checkpoint file manager, so that logs kept in log journals are read too. Tests read a
 * checkpoint with the {@code file://} URI, past {@code faultfs}: a schedule's faults are for its
 * run, not for the checks after it.
 */
final class SparkLogs {
  private static final Pattern NEXT_WATERMARK =
      Pattern.compile("\"nextBatchWatermarkMs\":(-?\\d+)");

  private final String checkpoint;
  private final RenameFreeCheckpointFileManager logs;

  SparkLogs(String checkpoint, Configuration hadoopConf) {
    this.checkpoint = checkpoint;
    this.logs = new RenameFreeCheckpointFileManager(new Path(checkpoint), hadoopConf);
  }

  /** The checkpoint's URI, for messages. */
  String checkpoint() {
    return checkpoint;
  }

  /** The entries of the log {@code name} by batch id (no compacted logs here: < 10 entries). */
  Map<Long, String> entries(String name) {
    Path dir = new Path(new Path(checkpoint), name);
    Map<Long, String> entries = new TreeMap<>();
    if (!logs.exists(dir)) {
      return entries;
    }
    for (FileStatus f : logs.list(dir)) {
      String file = f.getPath().getName();
      if (!file.matches("\\d+")) {
        if (file.endsWith(".compact")) {
          throw new IllegalStateException(f.getPath() + ": compacted logs are not read here");
        }
        continue;
      }
      try (InputStream in = logs.open(f.getPath())) {
        entries.put(Long.parseLong(file), new String(in.readAllBytes(), StandardCharsets.UTF_8));
      } catch (IOException e) {
        throw new UncheckedIOException(f.getPath().toString(), e);
      }
    }
    return entries;
  }

  /**
   * The watermark the run ended with: its last batch's commit log entry's {@code
   * nextBatchWatermarkMs}. Spark keeps only this global watermark across a restart, not each
   * source's: after a restart, a batch in which one side has no data holds it (a side without data
   * counts as 0 under the default minimum policy), so a restarted run can end with a lower one than
   * a run without the restart, its closed windows waiting for more input on both sides.
   */
  long finalWatermarkMs() {
    TreeMap<Long, String> offsets = new TreeMap<>(entries("offsets"));
    Map<Long, String> commits = entries("commits");
    if (offsets.isEmpty()) {
      throw new IllegalStateException(checkpoint + "/offsets holds no batch");
    }
    long last = offsets.lastKey();
    String commit = commits.get(last);
    if (commit == null) {
      throw new IllegalStateException(
          checkpoint + "/offsets/" + last + " has no commit log entry at the end of the run");
    }
    return watermark(NEXT_WATERMARK, commit, "commits/" + last);
  }

  private long watermark(Pattern pattern, String entry, String file) {
    Matcher m = pattern.matcher(entry);
    if (!m.find()) {
      throw new IllegalStateException(checkpoint + "/" + file + " has no " + pattern);
    }
    return Long.parseLong(m.group(1));
  }
}
