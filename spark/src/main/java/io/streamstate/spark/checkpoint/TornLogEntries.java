package io.streamstate.spark.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.RetryableException;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.HadoopStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sets aside the newest entry of Spark's offset or commit log that a driver left torn when it died
 * while writing it, so that a restarted query plans (or runs) that batch again instead of failing.
 *
 * <p>On local disk and HDFS our manager writes an entry at its final name, so a driver killed
 * mid-write leaves it empty or partial; on HDFS a hedged entry is even created empty and written at
 * close. Spark's own manager would have left a stray temp file and no entry. A torn newest entry is
 * that crash's artifact: an offset entry whose batch has no commit was never run (Spark runs a
 * batch only after its offset entry is written), and a commit entry's batch runs again from its
 * offset entry, as after any crash before the commit. Either way Spark, not finding the entry, does
 * what it would have done. Anything else torn (an older entry, the offset entry of a committed
 * batch) is damage, not a crash in flight, and stays refused when read ({@link
 * SparkLogEntries#checkComplete}).
 *
 * <p>A torn entry may also be a live writer's, in the milliseconds it takes to write one: another
 * driver on the same checkpoint (Spark's "concurrent queries" case), or the previous attempt of a
 * YARN application that is not quite dead. On HDFS the entry's lease is therefore recovered first,
 * which fences that writer (its close fails), and the entry is read again: complete, it is kept.
 * Local disk has no lease to take; there the torn entry is set aside as found.
 *
 * <p>Set aside means renamed to {@code .N.torn-<millis>} in the same directory (hidden from Spark,
 * whose logs list only batch ids; kept for inspection; {@code streamstate verify} lists it as a
 * stray and {@code export-logs} deletes it), with a WARN naming both. A rename off the batch's
 * path: once per log at a restart, and only after a crash. The entry's hedge copy, which did not
 * stand in for it, is deleted with it.
 */
final class TornLogEntries {
  private static final Logger LOG = LoggerFactory.getLogger(TornLogEntries.class);

  /** The suffix of a set-aside entry's name: {@code .N.torn-<millis>}. */
  static final String SET_ASIDE_MARK = ".torn-";

  private final FileSystem fs;

  /** The raw local file system behind {@link #fs}; null elsewhere. */
  private final RawLocalFileSystem local;

  private final CreateIfAbsent.Method method;
  private final ProcessResources resources;

  TornLogEntries(
      FileSystem fs,
      RawLocalFileSystem local,
      CreateIfAbsent.Method method,
      ProcessResources resources) {
    this.fs = fs;
    this.local = local;
    this.method = method;
    this.resources = resources;
  }

  /** What the manager knows of an entry: its content as the manager reads it. */
  interface EntryReader {
    /** The entry's first bytes ({@link SparkLogEntries#readForCheck}), or null if it is absent. */
    byte[] read(Path entry) throws IOException;
  }

  /** Whether the batch of an offset entry committed (asked only of a torn entry). */
  interface CommitCheck {
    boolean committed() throws IOException;
  }

  /**
   * Sets {@code entry}, the newest entry of its log, aside if it is torn.
   *
   * @param committed for an offset entry, whether its batch's commit entry exists (then a torn
   *     offset entry is damage and is left to be refused)
   * @param hedgeCopy the entry's hedge copy path, deleted with it; null if the store has none
   * @return whether the entry was set aside
   */
  boolean setAsideIfTorn(Path entry, CommitCheck committed, Path hedgeCopy, EntryReader reader)
      throws IOException {
    byte[] content = reader.read(entry);
    if (content == null || !SparkLogEntries.isTorn(content)) {
      return false;
    }
    if (committed.committed()) {
      return false;
    }
    if (local == null && fenceWriter(entry, hedgeCopy)) {
      content = reader.read(entry); // its writer may have completed it meanwhile
      if (content == null || !SparkLogEntries.isTorn(content)) {
        return false;
      }
    }
    Path aside =
        new Path(
            entry.getParent(), "." + entry.getName() + SET_ASIDE_MARK + System.currentTimeMillis());
    if (local != null) {
      try {
        Files.move(local.pathToFile(entry).toPath(), local.pathToFile(aside).toPath());
      } catch (NoSuchFileException e) {
        return false;
      }
    } else if (!fs.rename(entry, aside)) {
      if (!fs.exists(entry)) {
        return false;
      }
      throw new IOException("Cannot rename " + entry + " to " + aside);
    }
    if (hedgeCopy != null) {
      fs.delete(hedgeCopy, false);
    }
    LOG.warn(
        "Set aside {} ({} bytes, not a whole log entry): the newest entry of {}, torn by a driver"
            + " that died while writing it. Its batch did not commit; Spark plans or runs it again,"
            + " as after any crash before that write. Kept as {}.",
        entry,
        content.length,
        entry.getParent(),
        aside.getName());
    return true;
  }

  /**
   * Recovers the entry's lease, and its hedge copy's, where the file system can (HDFS): a writer
   * still holding them can no longer complete them. Returns whether it fenced; a store that cannot
   * fence (single-writer mode on a store without leases) has no second writer to fear.
   */
  private boolean fenceWriter(Path entry, Path hedgeCopy) throws IOException {
    HadoopStorage dir = HadoopStorage.openWith(fs, entry.getParent(), method, resources);
    if (!dir.canFence()) {
      return false;
    }
    try {
      dir.fence(entry.getName());
      if (hedgeCopy != null) {
        // A write still in flight (a query stopped mid-write in this JVM) may be writing its copy.
        dir.fence(hedgeCopy.getName());
      }
      return true;
    } catch (RetryableException e) { // fence() itself treats a missing file as nothing to fence
      throw new IOException(e.getMessage(), e);
    }
  }
}
