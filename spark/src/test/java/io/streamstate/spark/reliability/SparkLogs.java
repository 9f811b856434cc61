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
  private static final Pattern BATCH_WATERMARK = Pattern.compile("\"batchWatermarkMs\":(-?\\d+)");

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
   * The watermark the run's last batch ran with (the newest offset log entry's {@code
   * batchWatermarkMs}; that batch must be committed). A run that ends without the no-data batch
   * that emits the windows its last data batch's watermark closes shows a lower one than a run that
   * ran it. Spark skips that batch after a restart in two ways, with any provider: when the restart
   * comes after the last commit log entry (Spark runs a no-data batch only after a batch of the
   * same run), and when it re-ran the last data batch in which one side had no data (Spark keeps
   * only the global watermark across a restart, and a side without data counts as 0, so the re-run
   * batch's commit does not move it). Either way the windows wait for more input.
   */
  long lastBatchWatermarkMs() {
    TreeMap<Long, String> offsets = new TreeMap<>(entries("offsets"));
    if (offsets.isEmpty()) {
      throw new IllegalStateException(checkpoint + "/offsets holds no batch");
    }
    long last = offsets.lastKey();
    if (!entries("commits").containsKey(last)) {
      throw new IllegalStateException(
          checkpoint + "/offsets/" + last + " has no commit log entry at the end of the run");
    }
    Matcher m = BATCH_WATERMARK.matcher(offsets.get(last));
    if (!m.find()) {
      throw new IllegalStateException(checkpoint + "/offsets/" + last + " has no batchWatermarkMs");
    }
    return Long.parseLong(m.group(1));
  }
}
