package io.streamstate.cli.repair;

import io.streamstate.cli.checkpoint.Checkpoint;
import io.streamstate.cli.checkpoint.SparkLog;
import io.streamstate.cli.report.Sizes;
import io.streamstate.core.error.ConflictException;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.spark.shared.checkpoint.LogJournalReader;
import java.lang.reflect.Method;
import java.util.List;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * Whether a live query may hold the checkpoint, which {@code repair} then refuses to touch:
 *
 * <ol>
 *   <li>the log journal's fence: no journal of either log may have a live writer. On local disk a
 *       writer holds the journal's lock (tried and released at once, as the take-over's fence does,
 *       docs/protocol.md w2); on HDFS a journal still open for appends (not closed at the NameNode)
 *       is a running driver's, or a dead one's whose lease has not expired. Fencing there would be
 *       lease recovery, which stops a live writer: repair never does it.
 *   <li>the logs' age: the newest file of {@code offsets/} and {@code commits/} (an entry, a
 *       journal, a hedge copy) must be older than {@code --min-idle}; a query that runs writes both
 *       logs every batch.
 * </ol>
 */
public final class LiveQueryCheck {
  private LiveQueryCheck() {}

  /**
   * Checks {@code cp}.
   *
   * @param minIdleMillis how long the logs must have been unchanged (0: not checked)
   * @throws ConflictException a live query may hold the checkpoint: why, naming the file
   */
  public static void check(Checkpoint cp, long minIdleMillis, long nowMillis) {
    for (SparkLog log : List.of(cp.offsets(), cp.commits())) {
      // Every journal, as a take-over fences every older one (w2): the live writer's need not be
      // the newest (a refused take-over leaves a newer, empty one).
      for (LogJournalReader.JournalRead j : log.journals()) {
        checkJournal(log, j.name());
      }
    }
    if (minIdleMillis <= 0) {
      return;
    }
    FileInfo newest = null;
    String where = null;
    for (SparkLog log : List.of(cp.offsets(), cp.commits())) {
      for (FileInfo f : log.storage().list("")) {
        if (newest == null || f.lastModifiedMillis() > newest.lastModifiedMillis()) {
          newest = f;
          where = FramedFile.location(log.storage(), f.name());
        }
      }
    }
    if (newest != null && nowMillis - newest.lastModifiedMillis() < minIdleMillis) {
      throw new ConflictException(
          "refused: "
              + where
              + " was modified "
              + Sizes.millis(Math.max(0, nowMillis - newest.lastModifiedMillis()))
              + " ago, less than --min-idle "
              + Sizes.millis(minIdleMillis)
              + ": a query may still be running on this checkpoint (stop it first, or wait)");
    }
  }

  private static void checkJournal(SparkLog log, String journal) {
    Storage storage = log.storage();
    String location = FramedFile.location(storage, journal);
    if (storage instanceof LocalStorage local) {
      fenceLocally(local, journal, location);
      return;
    }
    if (!(storage instanceof HadoopStorage h)) {
      return;
    }
    FileSystem fs = h.fileSystem();
    if (fs instanceof LocalFileSystem || fs instanceof RawLocalFileSystem) {
      if (h.canFence()) {
        fenceLocally(h, journal, location);
      }
      return; // else single-writer mode: no lock to try; the logs' age decides
    }
    Boolean closed = isFileClosed(fs, new Path(h.root(), journal));
    if (Boolean.FALSE.equals(closed)) {
      throw new ConflictException(
          "refused: the log journal "
              + location
              + " is still open for appends (a running query holds it, or one that died less"
              + " than the lease period ago): stop the query first, or let its lease expire");
    }
  }

  /** On local disk a fence tries the writer's lock and releases it: a live writer is reported. */
  private static void fenceLocally(SupportsAppend storage, String journal, String location) {
    try {
      storage.fence(journal);
    } catch (ConflictException e) {
      throw new ConflictException(
          "refused: the log journal "
              + location
              + " is held by a live writer (a running query): stop it first",
          e);
    }
  }

  /** HDFS's {@code isFileClosed(Path)}, or null where the file system has none. */
  private static Boolean isFileClosed(FileSystem fs, Path path) {
    try {
      Method m = fs.getClass().getMethod("isFileClosed", Path.class);
      return (Boolean) m.invoke(fs, path);
    } catch (NoSuchMethodException e) {
      return null;
    } catch (ReflectiveOperationException e) {
      Throwable cause = e.getCause() == null ? e : e.getCause();
      throw new io.streamstate.core.error.RetryableException(
          "Cannot tell whether " + fs.makeQualified(path) + " is open for appends: " + cause,
          cause);
    }
  }
}
