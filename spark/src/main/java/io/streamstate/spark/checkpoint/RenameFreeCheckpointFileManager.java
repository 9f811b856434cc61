package io.streamstate.spark.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.DataNodePlacement;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.StreamStateConf;
import java.io.BufferedOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
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
 * <table>
 *   <caption>Create-if-absent per store</caption>
 *   <tr><th>store</th><th>create</th><th>name taken</th><th>{@code cancel()}</th></tr>
 *   <tr><td>{@code file:}</td><td>{@code java.nio} {@code CREATE_NEW} ({@code O_EXCL}); at close
 *       the file and its directory are forced to disk (no Hadoop local file system, which forks
 *       a process per file without its native library)</td>
 *       <td>{@code FileAlreadyExistsException} from {@code createAtomic}</td>
 *       <td>deletes the file (the name is ours: we created it)</td></tr>
 *   <tr><td>HDFS</td><td>{@code create(path, overwrite=false)} (atomic at the NameNode); {@code
 *       hsync} before close</td><td>from {@code createAtomic}</td><td>deletes the file</td></tr>
 *   <tr><td>stores with the path capability {@value HadoopStorage#CONDITIONAL_CREATE_CAPABILITY}
 *       (S3A, Hadoop 3.4.2+)</td><td>{@code createFile(path)} with that option: one PUT with
 *       {@code If-None-Match: *} at close, no HEAD or LIST before</td>
 *       <td>from {@code close()} (HTTP 412)</td><td>{@code abort()}: nothing is uploaded</td></tr>
 * </table>
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
 * <p>On file systems with DataNode pipelines (HDFS) every create goes through {@link
 * DataNodePlacement}: away from DataNodes a late write went through, while they are suspect.
 *
 * <h2>{@code createAtomic(path, overwriteIfPossible=true)}</h2>
 *
 * <p>Best effort, still without rename, and never throws because the file exists: local disk
 * deletes the old file and creates a new one; HDFS {@code create(overwrite=true)} (the NameNode
 * replaces the file at create); object stores PUT over the old object at close. On local disk and
 * HDFS the old content is therefore gone from the moment of {@code createAtomic}, not from {@code
 * close()}, and {@code cancel()} leaves no file rather than the old one. Spark uses overwrites for
 * files it can rewrite at will (its HDFS provider's snapshot files, some metadata), never for the
 * offset and commit logs.
 *
 * <h2>Caveat: local disk and HDFS show a file while it is written</h2>
 *
 * <p>Object stores publish a file whole at {@code close()}. Local disk and HDFS show it under its
 * final name from {@code createAtomic} on, growing as it is written; this class cannot hide that
 * without a rename. A reader racing the writer could see a prefix, but Spark reads a log entry only
 * after the write that produced it returned. What remains is a crash: a driver killed in the middle
 * of writing {@code offsets/N} or {@code commits/N} (a few hundred bytes, so a window of
 * milliseconds) leaves that file empty or partial. On restart Spark fails reading it ("Failed to
 * read log file ... Log file was malformed", or a JSON parse error naming the file). The user then
 * deletes that torn last file (the highest-numbered one of {@code offsets/} or {@code commits/},
 * only that one) and restarts: Spark plans batch N again from {@code offsets/N-1}, as if the driver
 * had died just before writing it. Spark's default manager would have left a stray {@code
 * .N.<uuid>.tmp} instead. Spark's own state providers write their files through this class with
 * {@code overwriteIfPossible=true}, so a torn state file of a killed task is rewritten by the
 * retry; two attempts writing one such file at once (speculation) replace each other's file on
 * local disk and HDFS: the name ends with the last creator's content, and on HDFS the earlier
 * writer fails. The streamstate provider does not write through this class: its files are
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
 * directories on local disk are made with {@code java.nio}.
 */
public class RenameFreeCheckpointFileManager implements CheckpointFileManager {
  private static final Logger LOG = LoggerFactory.getLogger(RenameFreeCheckpointFileManager.class);

  private final FileSystemBasedCheckpointFileManager delegate;
  private final FileSystem fs;
  private final Path checkpointPath;

  /** The raw local file system behind {@link #fs}; null elsewhere. */
  private final RawLocalFileSystem local;

  private final CreateIfAbsent.Method method;

  /** Where new files go on DataNodes (HDFS): away from suspect ones. */
  private final DataNodePlacement placement;

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

  /** Whether {@link StreamStateConf#LOG_JOURNAL} asks for log journals (docs/protocol.md). */
  private final boolean logJournalEnabled;

  /**
   * Per offset or commit log directory this manager touched: its {@link LogJournal} where entries
   * are journaled or journals exist, or {@link #PLAIN} where entries are plain files.
   */
  private final Map<Path, Object> logModes = new ConcurrentHashMap<>();

  private static final Object PLAIN = new Object();

  /** The process's log journals (and what managers learnt about them). */
  private final LogJournals journals;

  /** {@link StreamStateConf#LOG_JOURNAL_ROLL_RECORDS} of the configuration. */
  private final int journalRollRecords;

  /** The process's state of checkpoint file managers (warnings given, counters). */
  private final CheckpointProcessState processState;

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
    this.delegate = new FileSystemBasedCheckpointFileManager(path, hadoopConf);
    this.fs = delegate.fs();
    this.checkpointPath = path;
    this.local = CreateIfAbsent.rawLocal(fs);
    this.processState = CheckpointProcessState.of(resources);
    this.method = detect(fs, path, hadoopConf, processState);
    this.placement = DataNodePlacement.of(fs);
    this.hedges =
        method == CreateIfAbsent.Method.EXCLUSIVE_CREATE
            ? new HedgedLogWrites(fs, hadoopConf, placement, resources)
            : null;
    this.logJournalEnabled =
        Boolean.parseBoolean(hadoopConf.get(StreamStateConf.LOG_JOURNAL, "false").trim());
    this.journals = LogJournals.of(resources);
    this.journalRollRecords = StreamStateConf.logJournalRollRecords(hadoopConf);
  }

  // ---- log journals (docs/protocol.md, "Spark log journal") ----

  /** Whether {@code dir} is Spark's offset or commit log directory. */
  private static boolean isSparkLogDir(Path dir) {
    return dir != null && (dir.getName().equals("offsets") || dir.getName().equals("commits"));
  }

  /**
   * The journal of the log directory {@code dir}, or null where its entries are plain files: with
   * journals enabled on a store that can append and fence, or wherever journals exist (written with
   * them enabled: read through them until a writer without them writes them out).
   */
  private LogJournal logJournal(Path dir) {
    if (!isSparkLogDir(dir) || method == CreateIfAbsent.Method.SINGLE_WRITER) {
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
    if (logJournalEnabled) {
      HadoopStorage storage = HadoopStorage.open(fs, dir);
      if (storage.appendSupported() && storage.canFence()) {
        return journals.journal(
            storage, hedges == null ? null : hedges.writer(), journalRollRecords);
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
    LogJournal journal = journals.journal(storage, null, journalRollRecords);
    if (journal.hasJournals()) {
      return journal;
    }
    journals.noteNoJournal(dir.toString());
    return PLAIN;
  }

  /** The batch id of a log entry's path. */
  private static long batchIdOf(Path path) {
    return Long.parseLong(path.getName());
  }

  /**
   * A write of a journaled entry: buffered, and put into the journal at close. A name that exists
   * is refused here, as a create would refuse it.
   */
  private CancellableFSDataOutputStream createJournaled(LogJournal journal, Path path)
      throws IOException {
    long batchId = batchIdOf(path);
    if (journal.exists(batchId)) {
      throw new FileAlreadyExistsException(path + " already exists");
    }
    java.io.ByteArrayOutputStream buffer = new java.io.ByteArrayOutputStream(512);
    return new DirectOutputStream(
        buffer,
        path,
        () -> {
          try {
            journal.put(batchId, buffer.toByteArray());
          } catch (io.streamstate.core.error.FileAlreadyExistsException e) {
            throw nameTaken(path, e);
          } catch (io.streamstate.core.error.StreamStateException e) {
            throw new IOException(
                "Cannot write " + path + " to its log journal: " + e.getMessage(), e);
          }
        },
        () -> {});
  }

  private static CreateIfAbsent.Method detect(
      FileSystem fs, Path path, Configuration conf, CheckpointProcessState processState) {
    Optional<CreateIfAbsent.Method> detected;
    try {
      detected = CreateIfAbsent.detect(fs, path);
    } catch (RetryableException e) {
      throw new UnsupportedException(e.getMessage(), e);
    }
    if (detected.isPresent()) {
      return detected.get();
    }
    if (!HadoopStorages.allowsSingleWriter(conf)) {
      throw new UnsupportedException(
          "Checkpoint location "
              + path
              + " ("
              + fs.getClass().getName()
              + ") does not guarantee create-if-absent, which "
              + RenameFreeCheckpointFileManager.class.getSimpleName()
              + " needs so that of two writers of one file (two queries on one checkpoint, a task"
              + " retry) exactly one wins. Supported: hdfs, local files, and stores with"
              + " conditional create (s3a on Hadoop 3.4.2+ with"
              + " fs.s3a.create.conditional.enabled=true). If only one writer can ever write"
              + " under this location, set "
              + HadoopStorages.SPARK_ALLOW_SINGLE_WRITER
              + "=true to accept that risk, or use Spark's default checkpoint file manager.");
    }
    if (processState.firstWarningOfSingleWriter(fs.getUri().toString())) {
      LOG.warn(
          "{} ({}) does not guarantee create-if-absent; checkpoint files are written in"
              + " single-writer mode ({}=true): two queries on one checkpoint may both believe"
              + " they wrote the same batch.",
          fs.getUri(),
          fs.getClass().getName(),
          HadoopStorages.SPARK_ALLOW_SINGLE_WRITER);
    }
    return CreateIfAbsent.Method.SINGLE_WRITER;
  }

  // ---- createAtomic ----

  @Override
  public CancellableFSDataOutputStream createAtomic(Path path, boolean overwriteIfPossible) {
    try {
      if (!overwriteIfPossible && isSparkLogEntry(path)) {
        LogJournal journal = logJournal(path.getParent());
        if (journal != null) {
          if (logJournalEnabled) {
            return createJournaled(journal, path);
          }
          // Journals from an earlier run with them enabled, and now a writer without: write them
          // out as files first, so that every reader sees the whole log from here on.
          journal.writeOut();
          Path dir = fs.makeQualified(path.getParent());
          logModes.put(dir, PLAIN);
          journals.noteNoJournal(dir.toString());
        }
      }
      switch (method) {
        case LOCAL_EXCLUSIVE:
          return remembered(path, createLocal(path, overwriteIfPossible));
        case EXCLUSIVE_CREATE:
          return remembered(path, createExclusive(path, overwriteIfPossible));
        case CONDITIONAL_CREATE:
          return remembered(path, createConditional(path, overwriteIfPossible));
        case SINGLE_WRITER:
          if (!overwriteIfPossible && fs.exists(path)) {
            throw new FileAlreadyExistsException(path + " already exists");
          }
          return createExclusive(path, overwriteIfPossible);
        default:
          throw new IllegalStateException("Unexpected create method " + method);
      }
    } catch (IOException e) {
      if (e instanceof FileAlreadyExistsException) {
        remembered(path, null);
      }
      // The trait declares no checked exceptions; Scala callers catch the IOException itself.
      throw sneakyThrow(e);
    }
  }

  /**
   * Notes that a log entry's name is (or may be) taken, listing its directory the first time this
   * manager writes there (see {@link #writtenLogDirs}); returns {@code out}.
   */
  private CancellableFSDataOutputStream remembered(Path path, CancellableFSDataOutputStream out) {
    if (!isSparkLogEntry(path)) {
      return out;
    }
    Path qualified = fs.makeQualified(path);
    Path dir = qualified.getParent();
    Set<String> names = writtenLogDirs.get(dir);
    if (names == null) {
      Set<String> listed = ConcurrentHashMap.newKeySet();
      try {
        if (local != null) {
          try (java.util.stream.Stream<java.nio.file.Path> files =
              Files.list(local.pathToFile(dir).toPath())) {
            files.forEach(f -> listed.add(f.getFileName().toString()));
          }
        } else {
          for (FileStatus f : fs.listStatus(dir)) {
            listed.add(f.getPath().getName());
          }
        }
      } catch (FileNotFoundException | java.nio.file.NoSuchFileException e) {
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

  private CancellableFSDataOutputStream createLocal(Path path, boolean overwrite)
      throws IOException {
    java.nio.file.Path file = local.pathToFile(fs.makeQualified(path)).toPath();
    Files.createDirectories(file.getParent());
    FileChannel channel = null;
    for (int attempt = 0; channel == null; attempt++) {
      if (overwrite) {
        // Through the Hadoop file system: it also removes a checksum file it may have written.
        fs.delete(path, false);
      }
      try {
        channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
      } catch (java.nio.file.FileAlreadyExistsException e) {
        if (!overwrite || attempt >= 10) {
          throw nameTaken(path, e);
        }
        // Another writer recreated it between our delete and create: delete again.
      }
    }
    FileChannel opened = channel;
    OutputStream out = new BufferedOutputStream(Channels.newOutputStream(opened), 64 << 10);
    return new DirectOutputStream(
        out,
        path,
        () -> {
          out.flush();
          opened.force(true);
          out.close();
          forceDirectory(file.getParent());
        },
        () -> {
          closeQuietly(out);
          Files.deleteIfExists(file);
        });
  }

  private static void forceDirectory(java.nio.file.Path dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      // Some file systems cannot open a directory for sync; the file itself is durable.
      LOG.debug("Cannot sync directory {}: {}", dir, e.toString());
    }
  }

  private CancellableFSDataOutputStream createExclusive(Path path, boolean overwrite)
      throws IOException {
    FSDataOutputStream out;
    try {
      out = placement.create(path, overwrite);
    } catch (IOException e) {
      if (!overwrite && CreateIfAbsent.isNameTaken(e)) {
        throw nameTaken(path, e);
      }
      throw e;
    }
    // The name is ours from here (created with overwrite=false, or replaced by us): a failed
    // close or a cancel deletes it, so no partial file of ours stays behind.
    IoAction withdraw =
        () -> {
          if (out.hasCapability(StreamCapabilities.ABORTABLE_STREAM)) {
            out.abort();
          } else {
            closeQuietly(out);
            fs.delete(path, false);
          }
        };
    if (!overwrite
        && hedges != null
        && hedges.enabled()
        && method == CreateIfAbsent.Method.EXCLUSIVE_CREATE
        && isHedgedLogEntry(path)) {
      // A log entry: buffered, and published hedged at close (HedgedLogWrites). The name is
      // already ours, so the hedge cannot make another writer of this batch lose or win.
      HedgeableBuffer buffer = new HedgeableBuffer(out);
      return new DirectOutputStream(
          buffer,
          path,
          () -> {
            if (buffer.spilled()) {
              completeDirect(path, out);
            } else {
              hedges.publish(path, out, buffer.bytes());
            }
          },
          withdraw);
    }
    return new DirectOutputStream(out, path, () -> completeDirect(path, out), withdraw);
  }

  /** Flush, hsync and close a stream created at its final name; on failure delete the name. */
  private void completeDirect(Path path, FSDataOutputStream out) throws IOException {
    try {
      out.flush();
      if (out.hasCapability(StreamCapabilities.HSYNC)) {
        placement.track(out).hsync(); // on HDFS: its DataNodes are then known to work
      }
      out.close();
    } catch (IOException | RuntimeException e) {
      closeQuietly(out);
      deleteQuietly(path, e);
      throw e;
    }
  }

  /**
   * Buffers a log entry in memory until close; past {@link HedgedLogWrites#MAX_HEDGED_BYTES} it
   * spills into the file's own stream and the write goes on unhedged.
   */
  private static final class HedgeableBuffer extends OutputStream {
    private final OutputStream out;
    private java.io.ByteArrayOutputStream buffer = new java.io.ByteArrayOutputStream(512);

    HedgeableBuffer(OutputStream out) {
      this.out = out;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (buffer == null) {
        out.write(b, off, len);
      } else if (buffer.size() + (long) len > HedgedLogWrites.MAX_HEDGED_BYTES) {
        buffer.writeTo(out);
        buffer = null;
        out.write(b, off, len);
      } else {
        buffer.write(b, off, len);
      }
    }

    @Override
    public void flush() throws IOException {
      if (buffer == null) {
        out.flush();
      }
    }

    /** Closing is the manager's stream's job ({@code close()} publishes, {@code cancel()}). */
    @Override
    public void close() {}

    boolean spilled() {
      return buffer == null;
    }

    byte[] bytes() {
      return buffer.toByteArray();
    }
  }

  private CancellableFSDataOutputStream createConditional(Path path, boolean overwrite)
      throws IOException {
    FSDataOutputStream out;
    try {
      var builder = fs.createFile(path).overwrite(overwrite).recursive();
      if (!overwrite) {
        // No existence probes: the store checks atomically at close (If-None-Match: *).
        builder.must(HadoopStorage.CONDITIONAL_CREATE_CAPABILITY, true);
      }
      out = builder.build();
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      throw new UnsupportedException(
          "Cannot create "
              + path
              + " with "
              + HadoopStorage.CONDITIONAL_CREATE_CAPABILITY
              + ": "
              + e,
          e);
    }
    return new DirectOutputStream(
        out,
        path,
        () -> {
          try {
            out.close();
          } catch (IOException e) {
            if (!overwrite && CreateIfAbsent.isConditionalCreateRefused(e)) {
              throw nameTaken(path, e);
            }
            throw e;
          }
        },
        () -> {
          if (out.hasCapability(StreamCapabilities.ABORTABLE_STREAM)) {
            // Publishes only at close: abort() drops the buffered data and any multipart upload.
            out.abort();
            return;
          }
          try {
            out.close();
          } catch (IOException e) {
            // Not published (refused, or failed): nothing of ours to remove.
            return;
          }
          // Published by the close: it is ours, remove it.
          fs.delete(path, false);
        });
  }

  private void deleteQuietly(Path path, Throwable cause) {
    try {
      fs.delete(path, false);
    } catch (IOException | RuntimeException e) {
      cause.addSuppressed(e);
    }
  }

  private static void closeQuietly(OutputStream out) {
    try {
      out.close();
    } catch (IOException | RuntimeException e) {
      LOG.debug("Ignoring failure to close a cancelled stream: {}", e.toString());
    }
  }

  private static FileAlreadyExistsException nameTaken(Path path, Throwable cause) {
    FileAlreadyExistsException e =
        new FileAlreadyExistsException(path + " already exists (another writer created it first)");
    e.initCause(cause);
    return e;
  }

  @SuppressWarnings("unchecked")
  private static <T extends Throwable> RuntimeException sneakyThrow(Throwable t) throws T {
    throw (T) t;
  }

  // ---- everything else: as Spark's FileSystemBasedCheckpointFileManager ----

  @Override
  public FSDataInputStream open(Path path) {
    if (isHedgedLogEntry(path)) {
      LogJournal journal = isSparkLogEntry(path) ? logJournal(path.getParent()) : null;
      if (journal != null) {
        byte[] entry = journal.get(batchIdOf(path));
        if (entry != null) {
          return HedgedLogWrites.streamOf(entry);
        }
      }
      FSDataInputStream hedged = hedges == null ? null : openHedgeCopy(path);
      if (hedged != null) {
        return hedged;
      }
    }
    if (isSparkLogEntry(path)) {
      checkComplete(path);
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
      throw sneakyThrow(e);
    }
    if (status.getLen() > payload.length) {
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

  /**
   * Entries of the metadata logs Spark writes on a batch's path, which are hedged: the offset and
   * commit logs' ({@link #isSparkLogEntry}), a file source's log's ({@code sources/<i>/N}) and a
   * file sink's log's ({@code _spark_metadata/N}); {@code N.compact} too (compacted batches of the
   * last two, {@code CompactibleFileStreamLog}).
   */
  private static boolean isHedgedLogEntry(Path path) {
    Path parent = path.getParent();
    if (parent == null || !HedgedLogWrites.isEntryName(path.getName())) {
      return false;
    }
    String dir = parent.getName();
    if (dir.equals("offsets") || dir.equals("commits") || dir.equals("_spark_metadata")) {
      return true;
    }
    Path grandParent = parent.getParent();
    return grandParent != null
        && grandParent.getName().equals("sources")
        && !dir.isEmpty()
        && dir.chars().allMatch(Character::isDigit);
  }

  /** Entries of Spark's offset and commit logs: {@code offsets/<n>}, {@code commits/<n>}. */
  private static boolean isSparkLogEntry(Path path) {
    Path parent = path.getParent();
    return parent != null
        && (parent.getName().equals("offsets") || parent.getName().equals("commits"))
        && path.getName().matches("\\d+");
  }

  /**
   * Spark's log entries carry no checksum, and on local disk and HDFS a driver that died while
   * writing one (we write in place, without a temp file) leaves it torn: Spark would then fail with
   * a JSON parser error that does not say which file. An entry is a version line and JSON objects,
   * so a complete one ends with '}' and its braces balance; check that and name the file.
   */
  private void checkComplete(Path path) {
    byte[] content;
    try (FSDataInputStream in = delegate.open(path)) {
      content = in.readNBytes(MAX_LOG_ENTRY_BYTES + 1);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot read " + path + ": " + e, e);
    }
    if (content.length > MAX_LOG_ENTRY_BYTES || isCompleteLogEntry(content)) {
      return;
    }
    throw new UncheckedIOException(
        new IOException(
            "Spark's checkpoint file "
                + path
                + " is incomplete ("
                + content.length
                + " bytes whose lines are not all complete JSON): torn by a crash while it"
                + " was written. If the query crashed while writing it, delete it and any later"
                + " entries of "
                + path.getParent()
                + ", so that Spark runs that batch again (spark/README.md, Reliability)."));
  }

  private static final int MAX_LOG_ENTRY_BYTES = 16 << 20;

  /** Parses log entry lines; trailing tokens on a line make it invalid. */
  private static final com.fasterxml.jackson.databind.ObjectMapper JSON =
      new com.fasterxml.jackson.databind.ObjectMapper()
          .enable(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

  /**
   * Whether {@code content} is a whole entry of Spark's offset or commit log: a version line
   * ({@code v1}), then lines that are each one complete JSON value (an object, or a number such as
   * a memory source's offset), or {@code -} (Spark's missing offset).
   */
  static boolean isCompleteLogEntry(byte[] content) {
    String[] lines = new String(content, java.nio.charset.StandardCharsets.UTF_8).split("\n", -1);
    if (lines.length < 2 || !lines[0].startsWith("v")) {
      return false;
    }
    for (int i = 1; i < lines.length; i++) {
      if (lines[i].equals("-")) {
        continue;
      }
      try {
        com.fasterxml.jackson.databind.JsonNode node = JSON.readTree(lines[i]);
        if (node == null || node.isMissingNode()) {
          return false;
        }
      } catch (IOException e) {
        return false;
      }
    }
    return true;
  }

  @Override
  public FileStatus[] list(Path path, PathFilter filter) {
    return withJournaledEntries(path, filter, withoutHedgeCopies(delegate.list(path, filter)));
  }

  @Override
  public FileStatus[] list(Path path) {
    return withJournaledEntries(path, p -> true, withoutHedgeCopies(delegate.list(path)));
  }

  /**
   * A log directory's listing where it has a journal: the log's live entries (journaled or plain
   * files, as the journal knows them), plus whatever else the directory holds that is not an entry
   * or a journal.
   */
  private FileStatus[] withJournaledEntries(Path dir, PathFilter filter, FileStatus[] files) {
    LogJournal journal = logJournal(dir);
    if (journal == null) {
      return files;
    }
    Map<String, FileStatus> byName = new java.util.TreeMap<>();
    for (FileStatus f : files) {
      String name = f.getPath().getName();
      if (!LogJournal.isJournalName(name) && !name.matches("\\d+")) {
        byName.put(name, f);
      }
    }
    Map<String, FileStatus> plain = new java.util.HashMap<>();
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

  /** Hedge copies ({@code .N.hedge}) are never listed: they stand in for {@code N}. */
  private static FileStatus[] withoutHedgeCopies(FileStatus[] files) {
    for (FileStatus f : files) {
      if (HedgedLogWrites.isHedgeName(f.getPath().getName())) {
        return java.util.Arrays.stream(files)
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
      throw sneakyThrow(e);
    }
  }

  @Override
  public boolean exists(Path path) {
    if (isSparkLogEntry(path)) {
      LogJournal journal = logJournal(path.getParent());
      if (journal != null) {
        return journal.exists(batchIdOf(path));
      }
    }
    if (!writtenLogDirs.isEmpty() && isSparkLogEntry(path)) {
      Path qualified = fs.makeQualified(path);
      Set<String> names = writtenLogDirs.get(qualified.getParent());
      if (names != null && !names.contains(qualified.getName())) {
        processState.existsAnsweredLocally().incrementAndGet();
        return false;
      }
    }
    return delegate.exists(path);
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
    if (isSparkLogEntry(path)) {
      LogJournal journal = logJournal(path.getParent());
      if (journal != null && logJournalEnabled) {
        journal.delete(batchIdOf(path)); // its plain file too, if it has one
        if (hedges != null) {
          delegate.delete(HedgedLogWrites.hedgePath(path));
        }
        return;
      }
    }
    if (hedges != null && isHedgedLogEntry(path)) {
      delegate.delete(HedgedLogWrites.hedgePath(path));
    }
    delegate.delete(path);
    if (!writtenLogDirs.isEmpty()) {
      if (isSparkLogEntry(path)) {
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

  /** Does not close the {@code FileSystem}: Hadoop caches and shares instances. */
  @Override
  public void close() {
    delegate.close();
  }

  @Override
  public String toString() {
    return "RenameFreeCheckpointFileManager[" + checkpointPath + ", " + method + "]";
  }

  /** An I/O step of a stream's end. */
  private interface IoAction {
    void run() throws IOException;
  }

  /**
   * The stream {@link #createAtomic} returns: writes go straight to the store's stream at the final
   * name; {@code close()} publishes (completes) it, {@code cancel()} withdraws it. Both happen at
   * most once, whichever comes first.
   */
  private static final class DirectOutputStream extends CancellableFSDataOutputStream {
    private final Path path;
    private final IoAction publish;
    private final IoAction withdraw;
    private boolean terminated;

    DirectOutputStream(OutputStream out, Path path, IoAction publish, IoAction withdraw) {
      super(out);
      this.path = path;
      this.publish = publish;
      this.withdraw = withdraw;
    }

    @Override
    public synchronized void close() throws IOException {
      if (terminated) {
        return;
      }
      terminated = true;
      publish.run();
    }

    @Override
    public synchronized void cancel() {
      if (terminated) {
        return;
      }
      terminated = true;
      try {
        withdraw.run();
      } catch (FileNotFoundException e) {
        // nothing there: nothing to withdraw
      } catch (IOException | RuntimeException e) {
        LOG.warn("Cannot withdraw the cancelled write of {}: {}", path, e.toString());
      }
    }

    @Override
    public String toString() {
      return "DirectOutputStream[" + path + "]";
    }
  }
}
