package io.streamstate.spark.checkpoint;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;

/**
 * What a Spark log entry is, to the checkpoint file manager: which paths are entries of the logs
 * Spark writes on a batch's path (and which of them can be hedged or journaled), and whether an
 * entry's content is complete.
 */
final class SparkLogEntries {
  private SparkLogEntries() {}

  /** Whether {@code dir} is Spark's offset or commit log directory. */
  static boolean isSparkLogDir(Path dir) {
    return dir != null && (dir.getName().equals("offsets") || dir.getName().equals("commits"));
  }

  /** The batch id of a log entry's path. */
  static long batchIdOf(Path path) {
    return Long.parseLong(path.getName());
  }

  /**
   * Entries of the metadata logs Spark writes on a batch's path, which are hedged: the offset and
   * commit logs' ({@link #isSparkLogEntry}), a file source's log's ({@code sources/<i>/N}) and a
   * file sink's log's ({@code _spark_metadata/N}); {@code N.compact} too (compacted batches of the
   * last two, {@code CompactibleFileStreamLog}).
   */
  static boolean isHedgedLogEntry(Path path) {
    Path parent = path.getParent();
    return parent != null
        && HedgedLogWrites.isEntryName(path.getName())
        && isSparkLogDirectory(parent);
  }

  /**
   * The directories of those logs: {@code offsets}, {@code commits}, {@code _spark_metadata}, and
   * {@code sources/<i>}.
   */
  static boolean isSparkLogDirectory(Path dir) {
    String name = dir.getName();
    if (name.equals("offsets") || name.equals("commits") || name.equals("_spark_metadata")) {
      return true;
    }
    Path parent = dir.getParent();
    return parent != null
        && parent.getName().equals("sources")
        && !name.isEmpty()
        && name.chars().allMatch(Character::isDigit);
  }

  /** Entries of Spark's offset and commit logs: {@code offsets/<n>}, {@code commits/<n>}. */
  static boolean isSparkLogEntry(Path path) {
    Path parent = path.getParent();
    return parent != null
        && (parent.getName().equals("offsets") || parent.getName().equals("commits"))
        && path.getName().matches("\\d+");
  }

  /**
   * Spark's log entries carry no checksum, and on local disk and HDFS a driver that died while
   * writing one (we write in place, without a temp file) leaves it torn: Spark would then fail with
   * a JSON parser error that does not say which file. An entry is a version line and JSON objects,
   * so a complete one ends with '}' and its braces balance; check that and name the file. The
   * newest entry of a log, torn by a crash, was set aside when the log was listed ({@link
   * TornLogEntries}); one that is still torn here is damage.
   */
  static void checkComplete(Path path, CheckpointFileManager files) {
    byte[] content;
    try (FSDataInputStream in = files.open(path)) {
      content = readForCheck(in);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + path + ": " + e, e);
    }
    if (!isTorn(content)) {
      return;
    }
    throw new UncheckedIOException(
        new IOException(
            "Spark's checkpoint file "
                + path
                + " is incomplete ("
                + content.length
                + " bytes whose lines are not all complete JSON): torn, and not as a crash leaves"
                + " the newest entry of a log (which a restart sets aside: this one is older than"
                + " others of "
                + path.getParent()
                + ", or its batch committed). Run `streamstate verify` on the checkpoint; restore"
                + " the entry from a backup (docs/protocol.md, \"A Spark log entry torn by a"
                + " crash\")."));
  }

  /** An entry's first bytes, as many as {@link #isTorn} needs. */
  static byte[] readForCheck(java.io.InputStream in) throws IOException {
    return in.readNBytes(MAX_LOG_ENTRY_BYTES + 1);
  }

  /**
   * Whether {@code content} (read by {@link #readForCheck}) is a torn entry: not a whole one, and
   * small enough to be checked.
   */
  static boolean isTorn(byte[] content) {
    return content.length <= MAX_LOG_ENTRY_BYTES && !isCompleteLogEntry(content);
  }

  private static final int MAX_LOG_ENTRY_BYTES = 16 << 20;

  /** Parses log entry lines; trailing tokens on a line make it invalid. */
  private static final ObjectMapper JSON =
      new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /**
   * Whether {@code content} is a whole entry of Spark's offset or commit log: a version line
   * ({@code v1}), then lines that are each one complete JSON value (an object, or a number such as
   * a memory source's offset), or {@code -} (Spark's missing offset).
   */
  static boolean isCompleteLogEntry(byte[] content) {
    String[] lines = new String(content, StandardCharsets.UTF_8).split("\n", -1);
    if (lines.length < 2 || !lines[0].startsWith("v")) {
      return false;
    }
    for (int i = 1; i < lines.length; i++) {
      if (lines[i].equals("-")) {
        continue;
      }
      try {
        JsonNode node = JSON.readTree(lines[i]);
        if (node == null || node.isMissingNode()) {
          return false;
        }
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }
}
