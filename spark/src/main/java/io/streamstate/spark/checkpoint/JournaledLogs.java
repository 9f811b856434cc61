package io.streamstate.spark.checkpoint;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.LogJournalFile;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.checkpoint.LogJournal;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import io.streamstate.spark.shared.checkpoint.TakenNames;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The manager's journaled path (docs/protocol.md, "Spark log journal"): per offset or commit log
 * directory, whether its entries are journaled ({@link LogJournal}) or plain files, the write of a
 * journaled entry, and a journaled log's listing.
 */
final class JournaledLogs {
  private static final Logger LOG = LoggerFactory.getLogger(JournaledLogs.class);

  private static final Object PLAIN = new Object();

  private final FileSystem fs;
  private final CreateIfAbsent.Method method;

  /** The writer hedging appends (null: not hedged). */
  private final HedgedWriter hedger;

  /** Whether {@link StreamStateConf#LOG_JOURNAL} asks for log journals. */
  private final boolean enabled;

  /** The process's log journals (and what managers learnt about them). */
  private final LogJournals journals;

  /** {@link StreamStateConf#LOG_JOURNAL_ROLL_RECORDS} of the configuration. */
  private final int rollRecords;

  /**
   * Per offset or commit log directory this manager touched: its {@link LogJournal} where entries
   * are journaled or journals exist, or {@link #PLAIN} where entries are plain files.
   */
  private final Map<Path, Object> logModes = new ConcurrentHashMap<>();

  JournaledLogs(
      FileSystem fs,
      CreateIfAbsent.Method method,
      HedgedWriter hedger,
      boolean enabled,
      LogJournals journals,
      int rollRecords) {
    this.fs = fs;
    this.method = method;
    this.hedger = hedger;
    this.enabled = enabled;
    this.journals = journals;
    this.rollRecords = rollRecords;
  }

  /** Whether log journals are enabled for writing. */
  boolean enabled() {
    return enabled;
  }

  /**
   * The journal of the log directory {@code dir}, or null where its entries are plain files: with
   * journals enabled on a store that can append and fence, or wherever journals exist (written with
   * them enabled: read through them until a writer without them writes them out).
   */
  LogJournal journalOf(Path dir) {
    if (!SparkLogEntries.isSparkLogDir(dir) || method == CreateIfAbsent.Method.SINGLE_WRITER) {
      return null;
    }
    Path qualified = fs.makeQualified(dir);
    Object mode = logModes.get(qualified);
    if (mode == null) {
      mode = decideLogMode(qualified);
      logModes.put(qualified, mode);
    }
    return mode == PLAIN ? null : (LogJournal) mode;
  }

  private Object decideLogMode(Path dir) {
    if (enabled) {
      HadoopStorage storage = HadoopStorage.open(fs, dir);
      if (storage.appendSupported() && storage.canFence()) {
        return journals.journal(storage, hedger, rollRecords);
      }
      if (journals.firstWarningOfNoJournal(fs.getUri().toString())) {
        LOG.warn(
            "{} is set but {} cannot append and fence ({}): Spark's log entries are written as"
                + " files",
            StreamStateConf.LOG_JOURNAL,
            fs.getUri(),
            fs.getClass().getName());
      }
    }
    if (journals.knownWithoutJournal(dir.toString())
        || method == CreateIfAbsent.Method.CONDITIONAL_CREATE) {
      return PLAIN;
    }
    HadoopStorage storage = HadoopStorage.open(fs, dir);
    LogJournal journal = journals.journal(storage, null, rollRecords);
    if (journal.hasJournals()) {
      return journal;
    }
    journals.noteNoJournal(dir.toString());
    return PLAIN;
  }

  /**
   * After a writer without journals wrote a log's journals out as files: the directory's entries
   * are plain files from now on, in this process.
   */
  void wroteOut(Path dir) {
    Path qualified = fs.makeQualified(dir);
    logModes.put(qualified, PLAIN);
    journals.noteNoJournal(qualified.toString());
  }

  /**
   * A write of a journaled entry: buffered, and put into the journal at close. A name that exists
   * is refused here, as a create would refuse it.
   */
  CancellableFSDataOutputStream create(LogJournal journal, Path path) throws IOException {
    long batchId = SparkLogEntries.batchIdOf(path);
    if (journal.exists(batchId)) {
      throw TakenNames.exists(path);
    }
    ByteArrayOutputStream buffer = new ByteArrayOutputStream(512);
    return new DirectCreates.DirectOutputStream(
        buffer,
        path,
        () -> {
          try {
            journal.put(batchId, buffer.toByteArray());
          } catch (FileAlreadyExistsException e) {
            throw TakenNames.nameTaken(path, e);
          } catch (StreamStateException e) {
            throw new IOException(
                "Cannot write " + path + " to its log journal: " + e.getMessage(), e);
          }
        },
        () -> {});
  }

  /**
   * A log directory's listing where it has a journal: the log's live entries (journaled or plain
   * files, as the journal knows them), plus whatever else the directory holds that is not an entry
   * or a journal.
   */
  FileStatus[] withJournaledEntries(Path dir, PathFilter filter, FileStatus[] files) {
    LogJournal journal = journalOf(dir);
    if (journal == null) {
      return files;
    }
    Map<String, FileStatus> byName = new TreeMap<>();
    for (FileStatus f : files) {
      String name = f.getPath().getName();
      if (!LogJournalFile.isName(name) && !name.matches("\\d+")) {
        byName.put(name, f);
      }
    }
    Map<String, FileStatus> plain = new HashMap<>();
    for (FileStatus f : files) {
      plain.put(f.getPath().getName(), f);
    }
    Path qualified = fs.makeQualified(dir);
    long now = System.currentTimeMillis();
    for (Map.Entry<Long, Long> e : journal.liveEntries().entrySet()) {
      Path entry = new Path(qualified, Long.toString(e.getKey()));
      if (!filter.accept(entry)) {
        continue;
      }
      FileStatus onDisk = plain.get(entry.getName());
      byName.put(
          entry.getName(),
          e.getValue() < 0 && onDisk != null
              ? onDisk
              : new FileStatus(Math.max(0, e.getValue()), false, 1, 0, now, entry));
    }
    return byName.values().toArray(new FileStatus[0]);
  }
}
