package io.streamstate.spark.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.StreamStateConf;
import io.streamstate.spark.shared.SparkLine;
import io.streamstate.spark.shared.checkpoint.CheckpointProcessState;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import io.streamstate.spark.shared.checkpoint.LogJournal;
import io.streamstate.spark.shared.checkpoint.LogJournals;
import io.streamstate.spark.shared.checkpoint.RocksDbUploads;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.Arrays;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.apache.spark.sql.execution.streaming.checkpointing.FileSystemBasedCheckpointFileManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A Spark 4.2 {@link CheckpointFileManager} that never renames: {@link #createAtomic} writes once,
 * directly at the final name, with the store's create-if-absent. Selected with {@code
 * spark.sql.streaming.checkpointFileManagerClass=io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager}
 * (a SQL conf; the first name, {@code io.streamstate.spark.RenameFreeCheckpointFileManager}, still
 * works; Spark copies it into the Hadoop configuration it constructs this class with).
 *
 * <p>Spark writes every file of a checkpoint through its checkpoint file manager: the offset and
 * commit logs ({@code offsets/N}, {@code commits/N}), the query metadata, operator metadata and
 * schema files, and the files of its own state store providers. Its default writes each to a temp
 * file and renames it (on S3 a COPY and a DELETE per file, and an {@code exists()} check that two
 * drivers can both pass).
 *
 * <h2>{@code createAtomic(path, overwriteIfPossible=false)}</h2>
 *
 * <p>On local disk {@code java.nio} {@code CREATE_NEW} (no Hadoop local file system, which forks a
 * process per file without its native library), on HDFS {@code create(path, overwrite=false)}, on
 * S3A with conditional create one PUT with {@code If-None-Match: *} at close: the storage layer's
 * create as a stream ({@code HadoopStorage.openNew}, one storage per directory written in), which
 * {@link DirectCreates} adapts to Spark's stream and Hadoop's exceptions. Where each store refuses
 * a taken name and how a cancel withdraws: the table in {@code docs/protocol.md}, "Create-if-absent
 * per store".
 *
 * <p>The exception is always {@link org.apache.hadoop.fs.FileAlreadyExistsException}, the one
 * Spark's {@code HDFSMetadataLog} catches to report two queries writing one checkpoint. Any other
 * store is refused by the constructor with an {@link UnsupportedException} naming the setting
 * ({@value HadoopStorages#SPARK_ALLOW_SINGLE_WRITER}) that accepts single-writer mode instead:
 * {@code exists()} then {@code create(overwrite=false)}, safe only if no two writers race.
 *
 * <h2>Hedged log entries (HDFS)</h2>
 *
 * <p>On stores whose create takes the name at {@code create()} ({@link
 * CreateIfAbsent.Method#EXCLUSIVE_CREATE}: HDFS and stores declaring the capability), an entry of a
 * metadata log Spark writes on a batch's path (the offset and commit logs {@code offsets/N}, {@code
 * commits/N}; a file source's log {@code sources/<i>/N}; a file sink's log {@code
 * _spark_metadata/N}; {@code N.compact} of the last two; up to 1 MiB) is created as above,
 * buffered, and published at close by {@link HedgedLogWrites}: its write to {@code N} races a copy
 * {@code .N.hedge} started after the hedge deadline, and close returns when either is complete.
 * {@link #open} reads a verified copy first, {@link #list} hides copies, {@link #delete} removes
 * the copy with its entry. See {@code docs/protocol.md}, "Hedged Spark log writes".
 *
 * <h2>Spark's RocksDB provider's uploads</h2>
 *
 * <p>Spark's {@code RocksDBStateStoreProvider} (the one provider Spark 4.2 runs {@code
 * transformWithState} on) writes each version's changelog and each snapshot's zip through this
 * class with {@code overwriteIfPossible=true} ({@link RocksDbUploads}): they are written once at
 * their final name, and on HDFS buffered up to {@link RocksDbUploads#MAX_HEDGED_BYTES} and
 * published hedged as log entries are, after the name's stale hedge copy (if any) is deleted.
 * {@link #open} reads a verified copy first, {@link #list} hides copies, {@link #delete} removes
 * the copy with its file. Its SST files bypass this class ({@code fs.copyFromLocalFile}).
 *
 * <p>On file systems with DataNode pipelines (HDFS) every create goes through the storage's
 * DataNode placement ({@code io.streamstate.hadoop.DataNodePlacement}): away from DataNodes a late
 * write went through, while they are suspect.
 *
 * <h2>{@code createAtomic(path, overwriteIfPossible=true)}</h2>
 *
 * <p>Never throws because the file exists. A free name is written at once, without rename, as
 * above. A taken name on local disk or HDFS, where a file shows at its name while written, is
 * written as Spark's default manager writes it: a temp file renamed over the name at close. The
 * file there stays whole until the new one is, and a cancel removes only the temp file (two
 * attempts of one task rewriting one state file leave one whole file whichever is killed). Object
 * stores PUT over the old object at close. Spark uses overwrites for files it can rewrite at will
 * (its providers' state files, some metadata), never for the offset and commit logs; it rewrites a
 * name only when a version is written again.
 *
 * <h2>Caveat: local disk and HDFS show a file while it is written</h2>
 *
 * <p>Object stores publish a file whole at {@code close()}. Local disk and HDFS show it under its
 * final name from {@code createAtomic} on, growing as it is written; this class cannot hide that
 * without a rename. A reader racing the writer could see a prefix, but Spark reads a log entry only
 * after the write that produced it returned. What remains is a crash: a driver killed in the middle
 * of writing {@code offsets/N} or {@code commits/N} (a few hundred bytes, so a window of
 * milliseconds) leaves that file empty or partial. The restarted query's manager sets such a newest
 * entry aside at its first listing of the log ({@link TornLogEntries}; on HDFS after recovering its
 * lease), and Spark plans or runs that batch again, as after a crash just before the write; any
 * other torn entry is refused when read, naming the file. Spark's default manager would have left a
 * stray {@code .N.<uuid>.tmp} instead. Spark's own state providers write their files through this
 * class with {@code overwriteIfPossible=true}, so a torn state file of a killed task is rewritten
 * by the retry (above). The streamstate provider does not write through this class: its files are
 * create-if-absent and verify themselves.
 *
 * <p>Thread-safe: Spark's {@code ChecksumCheckpointFileManager} calls it from several threads at
 * once. Each stream is used by one thread; its {@code close()} and {@code cancel()} are idempotent
 * and synchronized. {@link #close()} does not close the {@code FileSystem}, which Hadoop caches and
 * shares.
 *
 * <p>Everything but {@code createAtomic} behaves as Spark's {@link
 * FileSystemBasedCheckpointFileManager}, to which it delegates ({@code open}, {@code list}, {@code
 * exists}, {@code delete} recursive and silent on a missing path, {@code isLocal}), except that
 * directories on local disk are made with {@code java.nio}, that the first listing of an offset or
 * commit log may set aside a torn newest entry (above), and that on object stores, whose listings
 * may lag behind writes, {@link #list} of a directory not found is empty and the newest entries of
 * Spark's logs that a listing left out are found by name ({@link UnlistedLogEntries}, for {@link
 * #exists} of a log directory too).
 */
public class RenameFreeCheckpointFileManager implements CheckpointFileManager {
  private static final Logger LOG = LoggerFactory.getLogger(RenameFreeCheckpointFileManager.class);

  static {
    // SET -v lists our keys in a JVM that uses this class (SqlConfEntries).
    io.streamstate.spark.SqlConfEntries.register();
  }

  private final FileSystemBasedCheckpointFileManager delegate;
  private final FileSystem fs;
  private final Path checkpointPath;

  /** The raw local file system behind {@link #fs}; null elsewhere. */
  private final RawLocalFileSystem local;

  private final CreateIfAbsent.Method method;

  /** The plain-file path: create-if-absent per store. */
  private final DirectCreates direct;

  /** The journaled path of the offset and commit logs. */
  private final JournaledLogs journaled;

  /**
   * Hedged writes and reads of Spark's log entries, on stores that take a name at create (HDFS and
   * {@link CreateIfAbsent.Method#EXCLUSIVE_CREATE}); null elsewhere. Present even with hedging
   * disabled, so that entries written hedged earlier are still read through their hedge copy.
   */
  private final HedgedLogWrites hedges;

  /**
   * The offset and commit log directories this manager writes entries into, each with every name
   * this manager knows to be there: listed once when it first creates an entry there, plus the
   * entries it created since. {@link #exists} answers "absent" for any other entry name without a
   * request (two of Spark's per-batch requests). That is safe because Spark only ever asks before
   * creating the entry: if another writer did create it meanwhile (a second query on the
   * checkpoint), the create-if-absent fails, and Spark stops with the same "concurrent queries"
   * error it would have raised from a "present" answer. Never used in single-writer mode, which has
   * no create-if-absent to fall back on.
   */
  private final Map<Path, Set<String>> writtenLogDirs = new ConcurrentHashMap<>();

  /** The process's state of checkpoint file managers (warnings given, counters). */
  private final CheckpointProcessState processState;

  /**
   * Sets aside a newest log entry a crashed driver left torn, where entries show while written
   * (local disk, HDFS, single-writer stores); null on object stores, which publish whole.
   */
  private final TornLogEntries tornEntries;

  /** The offset and commit logs whose newest entry this manager has checked for a tear. */
  private final Set<Path> checkedLogDirs = ConcurrentHashMap.newKeySet();

  /**
   * The constructor Spark calls ({@code CheckpointFileManager.create}): the manager belongs to the
   * process's {@link ProcessResources#shared() resources}.
   *
   * @param path the directory this manager is for (a checkpoint, a log, a state directory)
   * @param hadoopConf the Hadoop configuration, with Spark's SQL settings copied in
   * @throws UnsupportedException the store gives no create-if-absent and single-writer mode is not
   *     accepted
   */
  public RenameFreeCheckpointFileManager(Path path, Configuration hadoopConf) {
    this(path, hadoopConf, ProcessResources.shared());
  }

  /**
   * A manager whose hedgers and log journals are those of {@code resources} (embedding, tests).
   *
   * @see #RenameFreeCheckpointFileManager(Path, Configuration)
   */
  public RenameFreeCheckpointFileManager(
      Path path, Configuration hadoopConf, ProcessResources resources) {
    SparkLine.checkRunningSpark();
    // The driver reads our keys here and may never open a store: name a mistyped key here too.
    StreamStateConf.checkKeys(hadoopConf, resources);
    this.delegate = new FileSystemBasedCheckpointFileManager(path, hadoopConf);
    this.fs = delegate.fs();
    this.checkpointPath = path;
    this.local = CreateIfAbsent.rawLocal(fs);
    this.processState = CheckpointProcessState.of(resources);
    this.method = DirectCreates.detect(fs, path, hadoopConf, processState);
    this.hedges =
        method == CreateIfAbsent.Method.EXCLUSIVE_CREATE
            ? new HedgedLogWrites(fs, hadoopConf, resources)
            : null;
    this.direct = new DirectCreates(fs, method, resources, hedges);
    this.journaled =
        new JournaledLogs(
            fs,
            method,
            hedges == null ? null : hedges.writer(),
            StreamStateConf.logJournalEnabled(hadoopConf),
            LogJournals.of(resources),
            StreamStateConf.logJournalRollRecords(hadoopConf));
    this.tornEntries =
        method == CreateIfAbsent.Method.CONDITIONAL_CREATE
            ? null
            : new TornLogEntries(fs, local, method, resources);
  }

  // ---- createAtomic ----

  @Override
  public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
    try {
      if (!overwriteIfPossible && SparkLogEntries.isSparkLogEntry(path)) {
        LogJournal journal = journaled.journalOf(path.getParent());
        if (journal != null) {
          if (journaled.enabled()) {
            return journaled.create(journal, path);
          }
          // Journals from an earlier run with them enabled, and now a writer without: write them
          // out as files first, so that every reader sees the whole log from here on.
          journal.writeOut();
          journaled.wroteOut(path.getParent());
        }
      }
      CancellableFSDataOutputStream out = direct.create(path, overwriteIfPossible);
      // Single-writer mode has no create-if-absent to fall back on: exists() keeps asking.
      return method == CreateIfAbsent.Method.SINGLE_WRITER ? out : remembered(path, out);
    } catch (IOException e) {
      if (e instanceof FileAlreadyExistsException) {
        remembered(path, null);
      }
      // The trait declares no checked exceptions; Scala callers catch the IOException itself.
      throw DirectCreates.sneakyThrow(e);
    }
  }

  /**
   * Notes that a log entry's name is (or may be) taken, listing its directory the first time this
   * manager writes there (see {@link #writtenLogDirs}); returns {@code out}.
   */
  private CancellableFSDataOutputStream remembered(Path path, CancellableFSDataOutputStream out) {
    if (!SparkLogEntries.isSparkLogEntry(path)) {
      return out;
    }
    Path qualified = fs.makeQualified(path);
    Path dir = qualified.getParent();
    Set<String> names = writtenLogDirs.get(dir);
    if (names == null) {
      Set<String> listed = ConcurrentHashMap.newKeySet();
      try {
        if (local != null) {
          try (var files = Files.list(local.pathToFile(dir).toPath())) {
            files.forEach(f -> listed.add(f.getFileName().toString()));
          }
        } else {
          for (FileStatus f : consistentListing(dir, p -> true)) {
            listed.add(f.getPath().getName());
          }
        }
      } catch (FileNotFoundException | NoSuchFileException e) {
        // No entry yet (on S3 the directory appears with the first entry's completion).
      } catch (IOException | UncheckedIOException e) {
        LOG.debug("Cannot list {}; exists() keeps asking the store: {}", dir, e.toString());
        return out;
      }
      names = writtenLogDirs.computeIfAbsent(dir, d -> listed);
    }
    names.add(qualified.getName());
    return out;
  }

  // ---- everything else: as Spark's FileSystemBasedCheckpointFileManager ----

  @Override
  public FSDataInputStream open(Path path) {
    if (SparkLogEntries.isHedgedLogEntry(path)) {
      LogJournal journal =
          SparkLogEntries.isSparkLogEntry(path) ? journaled.journalOf(path.getParent()) : null;
      if (journal != null) {
        byte[] entry = journal.get(SparkLogEntries.batchIdOf(path));
        if (entry != null) {
          return HedgedLogWrites.streamOf(entry);
        }
      }
      FSDataInputStream hedged = hedges == null ? null : openHedgeCopy(path);
      if (hedged != null) {
        return hedged;
      }
    } else if (hedges != null && RocksDbUploads.isUploadName(path.getName())) {
      FSDataInputStream hedged = openHedgeCopy(path);
      if (hedged != null) {
        return hedged;
      }
    }
    if (SparkLogEntries.isSparkLogEntry(path)) {
      SparkLogEntries.checkComplete(path, delegate);
    }
    return delegate.open(path);
  }

  /**
   * The entry's content from its hedge copy {@code .N.hedge}, if that verifies and {@code N} exists
   * and is not longer than it (so {@code N} is that entry, complete or still being written: its
   * length is at most the copy's); else null, and {@code N} is read as without hedging. Read first,
   * without touching {@code N}'s data: on HDFS reading a file whose write is stalled may stall too.
   */
  private FSDataInputStream openHedgeCopy(Path path) {
    byte[] payload = hedges.readHedge(path);
    if (payload == null) {
      return null;
    }
    FileStatus status;
    try {
      status = fs.getFileStatus(path);
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      throw DirectCreates.sneakyThrow(e);
    }
    if (!HedgedLogWrites.copyStandsIn(status.getLen(), payload)) {
      LOG.debug(
          "Ignoring {}: {} is longer ({} bytes) than the copy ({} bytes)",
          HedgedLogWrites.hedgePath(path),
          path,
          status.getLen(),
          payload.length);
      return null;
    }
    return HedgedLogWrites.streamOf(payload);
  }

  @Override
  public FileStatus[] list(Path path, PathFilter filter) {
    setAsideTornNewestEntryOnce(path);
    return journaled.withJournaledEntries(
        path, filter, withoutHedgeCopies(consistentListing(path, filter)));
  }

  @Override
  public FileStatus[] list(Path path) {
    setAsideTornNewestEntryOnce(path);
    return journaled.withJournaledEntries(
        path, p -> true, withoutHedgeCopies(consistentListing(path, p -> true)));
  }

  /**
   * At this manager's first listing of an offset or commit log (a query's start: Spark lists both
   * to find where to resume), sets aside a newest entry that a driver which died while writing it
   * left torn ({@link TornLogEntries}). Once per log and manager, so a running query's listings
   * (Spark's purge) cost nothing more; logs in log journals are skipped (a journal's torn last
   * record already ends it). A check that fails is logged and skipped: reading a torn entry is
   * still refused, naming it.
   */
  private void setAsideTornNewestEntryOnce(Path dir) {
    if (tornEntries == null || !SparkLogEntries.isSparkLogDir(dir)) {
      return;
    }
    Path qualified = fs.makeQualified(dir);
    if (!checkedLogDirs.add(qualified) || journaled.journalOf(qualified) != null) {
      return;
    }
    long newest = -1;
    try {
      for (FileStatus f : consistentListing(qualified, p -> true)) {
        if (SparkLogEntries.isSparkLogEntry(f.getPath())) {
          newest = Math.max(newest, SparkLogEntries.batchIdOf(f.getPath()));
        }
      }
    } catch (Exception e) { // Scala declares nothing: a missing directory's FileNotFoundException
      LOG.debug("Cannot list {} to check its newest entry: {}", qualified, e.toString());
      return;
    }
    if (newest < 0) {
      return;
    }
    Path entry = new Path(qualified, Long.toString(newest));
    try {
      TornLogEntries.CommitCheck committed =
          () ->
              qualified.getName().equals("offsets")
                  && exists(new Path(new Path(qualified.getParent(), "commits"), entry.getName()));
      Path hedgeCopy = hedges == null ? null : HedgedLogWrites.hedgePath(entry);
      if (tornEntries.setAsideIfTorn(entry, committed, hedgeCopy, this::readForTearCheck)) {
        Set<String> names = writtenLogDirs.get(qualified);
        if (names != null) {
          names.remove(entry.getName());
        }
      }
    } catch (IOException | RuntimeException e) {
      LOG.warn("Cannot check whether {} was torn by a crash: {}", entry, e.toString());
    }
  }

  /**
   * A plain log entry's content as {@link #open} reads it (its hedge copy if that stands in), up to
   * the size above which it is not checked; null if it is absent.
   */
  private byte[] readForTearCheck(Path entry) throws IOException {
    FSDataInputStream hedged = hedges == null ? null : openHedgeCopy(entry);
    try (FSDataInputStream in = hedged != null ? hedged : delegate.open(entry)) {
      return SparkLogEntries.readForCheck(in);
    } catch (FileNotFoundException e) {
      return null;
    }
  }

  /**
   * The directory's listing; on an object store, with the newest entries of a Spark log that the
   * listing left out found by their names ({@link UnlistedLogEntries}).
   */
  private FileStatus[] consistentListing(Path path, PathFilter filter) {
    FileStatus[] listed = listDirectory(path, filter);
    return method == CreateIfAbsent.Method.CONDITIONAL_CREATE
        ? UnlistedLogEntries.withUnlisted(fs, path, filter, listed)
        : listed;
  }

  /**
   * The delegate's listing; on an object store, a directory not found is listed as empty. There a
   * directory is only the common prefix of its objects (or a marker object), and a store whose
   * listings lag behind writes shows one just made (Spark's {@code mkdirs} before its first list)
   * as absent: an empty listing is the same stale answer as one missing its newest entries, which
   * {@link #consistentListing} completes for Spark's logs.
   */
  private FileStatus[] listDirectory(Path path, PathFilter filter) {
    try {
      return delegate.list(path, filter);
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) { // Scala declares nothing: the listing's FileNotFoundException
      if (e instanceof FileNotFoundException
          && method == CreateIfAbsent.Method.CONDITIONAL_CREATE) {
        LOG.debug("Listing {}: not found, taken as empty (object store): {}", path, e.toString());
        return new FileStatus[0];
      }
      throw DirectCreates.sneakyThrow(e);
    }
  }

  /** Hedge copies ({@code .N.hedge}) are never listed: they stand in for {@code N}. */
  private static FileStatus[] withoutHedgeCopies(FileStatus[] files) {
    for (FileStatus f : files) {
      if (HedgedLogWrites.isHedgeName(f.getPath().getName())) {
        return Arrays.stream(files)
            .filter(s -> !HedgedLogWrites.isHedgeName(s.getPath().getName()))
            .toArray(FileStatus[]::new);
      }
    }
    return files;
  }

  @Override
  public void mkdirs(Path path) {
    if (local == null) {
      delegate.mkdirs(path);
      return;
    }
    try {
      Files.createDirectories(local.pathToFile(fs.makeQualified(path)).toPath());
    } catch (IOException e) {
      throw DirectCreates.sneakyThrow(e);
    }
  }

  @Override
  public boolean exists(Path path) {
    if (SparkLogEntries.isSparkLogEntry(path)) {
      LogJournal journal = journaled.journalOf(path.getParent());
      if (journal != null) {
        return journal.exists(SparkLogEntries.batchIdOf(path));
      }
    }
    if (!writtenLogDirs.isEmpty() && SparkLogEntries.isSparkLogEntry(path)) {
      Path qualified = fs.makeQualified(path);
      Set<String> names = writtenLogDirs.get(qualified.getParent());
      if (names != null && !names.contains(qualified.getName())) {
        processState.existsAnsweredLocally().incrementAndGet();
        return false;
      }
    }
    boolean exists = delegate.exists(path);
    if (!exists
        && method == CreateIfAbsent.Method.CONDITIONAL_CREATE
        && SparkLogEntries.isSparkLogDirectory(path)) {
      // An object store tells a directory by listing its prefix: a log whose every entry is still
      // out of the listings (all written within the lag) looks absent, and Spark, asking this
      // before it lists, would start the query afresh. Ask for its entries by name.
      return consistentListing(path, p -> true).length > 0;
    }
    return exists;
  }

  /**
   * Times {@link #exists} answered "absent" without a request, by the managers of this process
   * ({@link ProcessResources#shared()}).
   */
  public static long existsAnsweredLocally() {
    return CheckpointProcessState.of(ProcessResources.shared()).existsAnsweredLocally().get();
  }

  /**
   * Recursive; does nothing if {@code path} is absent. A log entry's hedge copy goes first, so that
   * a copy never outlives its entry.
   */
  @Override
  public void delete(Path path) {
    if (SparkLogEntries.isSparkLogEntry(path)) {
      LogJournal journal = journaled.journalOf(path.getParent());
      if (journal != null && journaled.enabled()) {
        journal.delete(SparkLogEntries.batchIdOf(path)); // its plain file too, if it has one
        if (hedges != null) {
          delegate.delete(HedgedLogWrites.hedgePath(path));
        }
        return;
      }
    }
    if (hedges != null
        && (SparkLogEntries.isHedgedLogEntry(path)
            || RocksDbUploads.isUploadName(path.getName()))) {
      delegate.delete(HedgedLogWrites.hedgePath(path));
    }
    delegate.delete(path);
    if (!writtenLogDirs.isEmpty()) {
      if (SparkLogEntries.isSparkLogEntry(path)) {
        Path qualified = fs.makeQualified(path);
        Set<String> names = writtenLogDirs.get(qualified.getParent());
        if (names != null) {
          names.remove(qualified.getName());
        }
      } else {
        writtenLogDirs.clear(); // a directory may have gone: list again when next writing
      }
    }
  }

  @Override
  public boolean isLocal() {
    return delegate.isLocal();
  }

  @Override
  public Path createCheckpointDirectory() {
    if (local == null) {
      return delegate.createCheckpointDirectory();
    }
    Path qualified = fs.makeQualified(checkpointPath);
    mkdirs(qualified);
    return qualified;
  }

  /**
   * Spark 4.1+ API (no {@code @Override}: also compiled against 4.0, which lacks it). Closes
   * nothing: Hadoop caches and shares {@code FileSystem} instances, and the delegate's {@code
   * close()} is Spark's no-op default.
   */
  public void close() {}

  @Override
  public String toString() {
    return "RenameFreeCheckpointFileManager[" + checkpointPath + ", " + method + "]";
  }
}
