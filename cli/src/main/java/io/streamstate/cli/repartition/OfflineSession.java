package io.streamstate.cli.repartition;

import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.format.LogJournalFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.streaming.checkpointing.CommitMetadataBase;
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryCheckpointMetadata;
import scala.Option;

/**
 * The Spark session an offline rewrite of a checkpoint runs in: the one already running in this
 * JVM, else a local one it stops after; with the command's Hadoop settings, set to the checkpoint
 * format the checkpoint's commit log was written in, as Spark's rewriter requires, and to our
 * checkpoint file manager when the logs hold what only it reads.
 */
final class OfflineSession {
  private static final String FORMAT = "spark.sql.streaming.stateStore.checkpointFormatVersion";
  private static final String MANAGER = "spark.sql.streaming.checkpointFileManagerClass";
  private static final String OUR_MANAGER =
      "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager";

  private OfflineSession() {}

  /**
   * Runs {@code work} with the session's checkpoint format set to the commit log's ({@code work}
   * gets that format); {@code hadoopConf} are Hadoop settings (a {@code spark.hadoop.} prefix is
   * allowed).
   */
  static <T> T run(
      String app,
      String location,
      Map<String, String> hadoopConf,
      String master,
      java.util.function.BiFunction<SparkSession, Integer, T> work) {
    Option<SparkSession> active = SparkSession.getActiveSession();
    if (active.isEmpty()) {
      active = SparkSession.getDefaultSession();
    }
    boolean own = active.isEmpty();
    SparkSession spark;
    if (own) {
      SparkSession.Builder builder =
          SparkSession.builder().master(master).appName(app).config("spark.ui.enabled", "false");
      hadoopConf.forEach(
          (k, v) -> builder.config(k.startsWith("spark.hadoop.") ? k : "spark.hadoop." + k, v));
      spark = builder.getOrCreate();
      spark.sparkContext().setLogLevel("ERROR");
    } else {
      spark = active.get();
      hadoopConf.forEach(
          (k, v) ->
              spark
                  .sparkContext()
                  .hadoopConfiguration()
                  .set(k.startsWith("spark.hadoop.") ? k.substring(13) : k, v));
    }
    Map<String, String> previous = new HashMap<>();
    try {
      if (writtenByOurManager(spark, location)) {
        set(spark, MANAGER, OUR_MANAGER, previous);
      }
      int format = commitLogFormat(spark, location);
      set(spark, FORMAT, String.valueOf(format), previous);
      return work.apply(spark, format);
    } finally {
      if (own) {
        spark.stop();
      } else {
        previous.forEach(
            (k, v) -> {
              if (v == null) {
                spark.conf().unset(k);
              } else {
                spark.conf().set(k, v);
              }
            });
      }
    }
  }

  private static void set(SparkSession spark, String key, String value, Map<String, String> old) {
    old.putIfAbsent(key, spark.conf().get(key, null));
    spark.conf().set(key, value);
  }

  /**
   * Whether the checkpoint's logs hold what only our checkpoint file manager reads: a log journal,
   * or a hedge copy that stands in for an entry torn at its name (protocol.md, w1 and sl5). Spark's
   * own manager would not see the journaled batches, or would read the torn entry.
   */
  private static boolean writtenByOurManager(SparkSession spark, String location) {
    try {
      Path root = new Path(location);
      FileSystem fs = root.getFileSystem(spark.sessionState().newHadoopConf());
      for (String log : new String[] {"offsets", "commits"}) {
        Path dir = new Path(root, log);
        if (!fs.exists(dir)) {
          continue;
        }
        for (FileStatus f : fs.listStatus(dir)) {
          String n = f.getPath().getName();
          if (LogJournalFile.isName(n) || n.endsWith(HedgeCopyFile.NAME_SUFFIX)) {
            return true;
          }
        }
      }
      return false;
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot list the logs of " + location, e);
    }
  }

  /** The version of the last committed batch's commit entry (1 if none). */
  private static int commitLogFormat(SparkSession spark, String location) {
    StreamingQueryCheckpointMetadata checkpoint =
        new StreamingQueryCheckpointMetadata(spark, location, true);
    Option<Object> lastCommitted = checkpoint.commitLog().getLatestBatchId();
    if (lastCommitted.isDefined()) {
      Option<CommitMetadataBase> commit = checkpoint.commitLog().get((Long) lastCommitted.get());
      if (commit.isDefined()) {
        return commit.get().version();
      }
    }
    return 1;
  }
}
