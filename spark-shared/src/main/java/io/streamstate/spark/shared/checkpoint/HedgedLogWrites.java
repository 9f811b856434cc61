package io.streamstate.spark.shared.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.format.HedgeCopyFile;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.PendingFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import io.streamstate.hadoop.DataNodePlacement;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.spark.shared.Hedgers;
import io.streamstate.spark.shared.StreamStateSettings;
import java.io.ByteArrayInputStream;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PositionedReadable;
import org.apache.hadoop.fs.Seekable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Hedged writes of the entries of Spark's metadata logs written on a batch's path (the offset and
 * commit logs {@code offsets/N}, {@code commits/N}, a file source's {@code sources/<i>/N}, a file
 * sink's {@code _spark_metadata/N}; {@code N.compact} too) for {@code
 * io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager} on stores whose create-if-absent
 * takes the name at {@code create()} (HDFS, {@link
 * io.streamstate.hadoop.CreateIfAbsent.Method#EXCLUSIVE_CREATE}). See {@code docs/protocol.md},
 * "Hedged Spark log writes".
 *
 * <p>The manager has already created {@code N} through its directory's storage ({@code openNew(N,
 * overwrite=false)}) in {@code createAtomic}: the name is this writer's, exactly as without
 * hedging, and a second writer already failed there. The stream buffers the entry; at close {@link
 * #publish} hands the bytes to a {@link HedgedWriter} whose "primary create" writes them to that
 * pending file (write, hsync, close: where a slow datanode stalls) and whose "alternate create"
 * writes a new file {@code .N.hedge} holding the same bytes followed by a trailer ({@link
 * HedgeCopyFile}), so that a reader can tell a complete hedge copy from a torn one. The first to
 * complete returns from close. {@code N} itself always holds the raw entry (Spark and any tool read
 * it unchanged) once its write completes.
 *
 * <ul>
 *   <li>The hedge copy is written only after the name {@code N} is ours, so it can never make a
 *       second writer of batch N win: the name still arbitrates.
 *   <li>A hedge is never a retry: if the primary write has already failed when the hedge would
 *       start, the hedge is refused and close fails as without hedging (the partial {@code N} is
 *       deleted).
 *   <li>If the primary completes after the hedge won, the hedge copy is deleted ({@code N} is then
 *       complete). If the primary fails after the hedge won, {@code N} stays torn and the batch is
 *       read from {@code .N.hedge} (logged at WARN): only this manager reads it then.
 *   <li>On HDFS, the hedge reports the primary's pipeline as late first ({@link
 *       DataNodePlacement}): the copy is created on other DataNodes.
 * </ul>
 *
 * <p>The changelogs and snapshot zips of Spark's RocksDB provider ({@link RocksDbUploads}) are
 * published the same way, with two differences. Spark overwrites them ({@code
 * overwriteIfPossible=true}: a retry of a version must replace the first attempt's file), so the
 * manager first deletes a hedge copy an earlier write of the name may have left, then creates the
 * name with {@code overwrite=true}: a copy beside a name is always of that name's current write.
 * And they have writers of their own ({@link Hedgers.Kind#SPARK_STATE_FILES}, one per size class:
 * up to 1 MiB, up to {@link RocksDbUploads#MAX_HEDGED_BYTES}), whose deadlines follow their own
 * latencies.
 *
 * <p>One {@link HedgedWriter} per process and policy ({@link Hedgers.Kind#SPARK_LOGS}), separate
 * from the state stores' (log writes have their own latencies), with the policy of our {@code
 * hedge.*} keys if Spark copied them into the Hadoop configuration (it copies every SQL conf), else
 * {@link HedgePolicy#defaults()}.
 *
 * <p>Public for the adapters' checkpoint file manager ({@code io.streamstate.spark.checkpoint});
 * not an API.
 */
public final class HedgedLogWrites {
  private static final Logger LOG = LoggerFactory.getLogger(HedgedLogWrites.class);

  /** Entries larger than this are not buffered, and written directly as without hedging. */
  public static final int MAX_HEDGED_BYTES = 1 << 20;

  private final FileSystem fs;
  private final HedgedWriter writer;

  /** The writers of Spark's RocksDB provider's uploads, for files up to 1 MiB and larger. */
  private final HedgedWriter stateFileWriter;

  private final HedgedWriter largeStateFileWriter;

  /** Primary writes that failed after their hedge copy had won (the entry is torn at its name). */
  private final AtomicLong primaryFailuresAfterHedge;

  /**
   * The hedged log writes of a manager on {@code fs}, with the hedge policy of {@code conf}, whose
   * writer is shared by the managers of {@code resources} with that policy.
   */
  public HedgedLogWrites(FileSystem fs, Configuration conf, ProcessResources resources) {
    this.fs = fs;
    this.writer = writerOf(resources, conf);
    // A policy each: a policy carries its writer's deadline and counters.
    this.stateFileWriter =
        Hedgers.of(resources)
            .writer(
                Hedgers.Kind.SPARK_STATE_FILES,
                StreamStateSettings.hedgePolicy(conf),
                STATE_FILE_CLASS_SMALL);
    this.largeStateFileWriter =
        Hedgers.of(resources)
            .writer(
                Hedgers.Kind.SPARK_STATE_FILES,
                StreamStateSettings.hedgePolicy(conf),
                STATE_FILE_CLASS_LARGE);
    this.primaryFailuresAfterHedge =
        CheckpointProcessState.of(resources).primaryFailuresAfterHedge();
  }

  /**
   * Size classes of Spark's RocksDB uploads, each with its own hedge deadline (a 5 MiB changelog
   * takes longer than a 2 KiB zip): up to {@link #MAX_HEDGED_BYTES}, and larger.
   */
  private static final int STATE_FILE_CLASS_SMALL = 0;

  private static final int STATE_FILE_CLASS_LARGE = 1;

  /** The process's writer of log entries for the policy of {@code conf}. */
  private static HedgedWriter writerOf(ProcessResources resources, Configuration conf) {
    return Hedgers.of(resources)
        .writer(Hedgers.Kind.SPARK_LOGS, StreamStateSettings.hedgePolicy(conf));
  }

  /** The counters of the writer that managers with {@code conf} use; for tests and tools. */
  public static HedgeMetrics.Snapshot metrics(ProcessResources resources, Configuration conf) {
    return writerOf(resources, conf).policy().metrics().snapshot();
  }

  /** The hedge deadline now of the writer that managers with {@code conf} use; for tests. */
  static Duration deadline(ProcessResources resources, Configuration conf) {
    return writerOf(resources, conf).policy().deadline();
  }

  /** Primary writes that failed after their hedge won, in the process of {@code resources}. */
  public static long primaryFailuresAfterHedge(ProcessResources resources) {
    return CheckpointProcessState.of(resources).primaryFailuresAfterHedge().get();
  }

  /** Whether the policy hedges at all ({@code hedge.enabled}). */
  public boolean enabled() {
    return writer.policy().isEnabled();
  }

  /** The hedged writer of log writes, which log journals share. */
  public HedgedWriter writer() {
    return writer;
  }

  /** The hedge copy of {@code entry}: {@code .N.hedge} beside it. */
  public static Path hedgePath(Path entry) {
    return new Path(entry.getParent(), HedgeCopyFile.nameOf(entry.getName()));
  }

  /**
   * Whether {@code name} is a hedge copy's name: {@code .<digits>[.compact].hedge} of a log entry,
   * or {@code .<version>[_<id>].changelog.hedge}, {@code .<version>[_<id>].zip.hedge} of Spark's
   * RocksDB provider's uploads ({@link RocksDbUploads}).
   */
  public static boolean isHedgeName(String name) {
    String suffix = HedgeCopyFile.NAME_SUFFIX;
    if (!name.startsWith(".") || !name.endsWith(suffix) || name.length() <= 1 + suffix.length()) {
      return false;
    }
    String copied = name.substring(1, name.length() - suffix.length());
    return isEntryName(copied) || RocksDbUploads.isUploadName(copied);
  }

  /**
   * Whether {@code name} is a metadata log entry's name: a batch id ({@code N}), or a compacted
   * batch of a file source's or sink's log ({@code N.compact}).
   */
  public static boolean isEntryName(String name) {
    String id =
        name.endsWith(COMPACT_SUFFIX)
            ? name.substring(0, name.length() - COMPACT_SUFFIX.length())
            : name;
    return !id.isEmpty() && id.chars().allMatch(Character::isDigit);
  }

  private static final String COMPACT_SUFFIX = ".compact";

  /**
   * The payload of {@code entry}'s hedge copy if there is one and it verifies, else null (absent,
   * torn, unreadable, or deleted while read: the caller reads {@code entry} itself).
   */
  public byte[] readHedge(Path entry) {
    Path hedge = hedgePath(entry);
    byte[] bytes;
    int max =
        RocksDbUploads.isUploadName(entry.getName())
            ? RocksDbUploads.MAX_HEDGED_BYTES
            : MAX_HEDGED_BYTES;
    try (FSDataInputStream in = fs.open(hedge)) {
      bytes = in.readNBytes(max + HedgeCopyFile.TRAILER_LENGTH + 1);
    } catch (FileNotFoundException e) {
      return null;
    } catch (IOException e) {
      LOG.debug("Cannot read the hedge copy {}, reading {}: {}", hedge, entry, e.toString());
      return null;
    }
    try {
      return HedgeCopyFile.decode(bytes, hedge.toString());
    } catch (CorruptFileException e) {
      LOG.debug("Ignoring {}", e.getMessage());
      return null;
    }
  }

  /**
   * sl5: whether the complete hedge copy whose payload is {@code copyPayload} is read instead of
   * its entry {@code N}, which exists and is {@code entryLength} bytes long: when {@code N} is not
   * longer than the copy ({@code N} is then that entry, complete or still being written, or torn
   * after its hedge won). The manager's reads and the CLI's take entries by this one rule.
   */
  public static boolean copyStandsIn(long entryLength, byte[] copyPayload) {
    return entryLength <= copyPayload.length;
  }

  /** A stream over a payload read from a hedge copy, as {@code open} returns. */
  public static FSDataInputStream streamOf(byte[] payload) {
    return new FSDataInputStream(new SeekableBytes(payload));
  }

  /**
   * Publishes {@code bytes} as the entry {@code entry}, the file {@code primary} that the caller
   * opened in {@code dir} (its directory's storage) with {@code openNew(name, overwrite=false)}, or
   * for an upload of Spark's RocksDB provider ({@link RocksDbUploads}) with {@code overwrite=true}
   * after deleting any hedge copy an earlier write of that name left; returns once {@code entry} or
   * its hedge copy is complete.
   *
   * @throws IOException neither completed (both copies are removed, as without hedging), or the
   *     caller was interrupted ({@link InterruptedIOException}; the writes already started
   *     continue, nothing is removed)
   */
  public void publish(HadoopStorage dir, Path entry, PendingFile primary, byte[] bytes)
      throws IOException {
    Race race = new Race(dir, entry, primary, bytes);
    HedgedPublish result;
    try {
      result =
          writerFor(entry, bytes).publish(race, entry.getName(), hedgePath(entry).getName(), bytes);
    } catch (OutcomeUnknownException e) {
      if (Thread.currentThread().isInterrupted()) {
        // The creates already started continue: the entry or its hedge may still complete.
        InterruptedIOException ie =
            new InterruptedIOException(
                "Interrupted while writing " + entry + ": " + e.getMessage());
        ie.initCause(e);
        throw ie;
      }
      throw race.failed(e);
    } catch (StreamStateException e) {
      throw race.failed(e);
    }
    if (result.hedgeFired()) {
      LOG.debug(
          "Hedged the write of {}: {} won after {} ms",
          entry,
          result.hedgeWon() ? "the hedge copy" : "the entry",
          result.latency().toMillis());
    }
  }

  /**
   * The writer of {@code entry}: log entries share one, Spark's RocksDB uploads have one per size
   * class (their latencies are theirs, not the log entries').
   */
  private HedgedWriter writerFor(Path entry, byte[] bytes) {
    if (!RocksDbUploads.isUploadName(entry.getName())) {
      return writer;
    }
    return bytes.length <= MAX_HEDGED_BYTES ? stateFileWriter : largeStateFileWriter;
  }

  /**
   * One hedged write, as the {@link Storage} a {@link HedgedWriter} publishes to: the primary name
   * goes to the already open pending file, the alternate name is the framed hedge copy, in the same
   * directory's storage (whose placement sees the primary's pipeline reported late).
   */
  private final class Race implements Storage, SupportsLateWriteReports {
    private final HadoopStorage dir;
    private final Path entry;
    private final PendingFile primary;
    private final byte[] bytes;
    private final String primaryName;
    private final String hedgeName;
    private boolean primaryFailed;
    private boolean hedgeComplete;

    Race(HadoopStorage dir, Path entry, PendingFile primary, byte[] bytes) {
      this.dir = dir;
      this.entry = entry;
      this.primary = primary;
      this.bytes = bytes;
      this.primaryName = primary.name();
      this.hedgeName = hedgePath(entry).getName();
    }

    @Override
    public void create(String name, ContentWriter content) {
      if (name.equals(primaryName)) {
        writePrimary();
      } else if (name.equals(hedgeName)) {
        writeHedge();
      } else {
        throw new IllegalArgumentException(name);
      }
    }

    private void writePrimary() {
      try {
        primary.stream().write(bytes);
        primary.publish();
      } catch (IOException | RuntimeException e) {
        boolean torn;
        synchronized (this) {
          primaryFailed = true;
          torn = hedgeComplete;
        }
        if (torn) {
          tornAfterHedge(e);
        }
        // Nothing is withdrawn here: if the hedge wins, the name must stay ours.
        throw new RetryableException("Cannot write " + entry + ": " + e, e);
      }
    }

    private void writeHedge() {
      synchronized (this) {
        if (primaryFailed) {
          throw new RetryableException(
              "Not hedging " + entry + ": its write failed (a hedge is not a retry)");
        }
      }
      dir.create(hedgeName, out -> out.write(HedgeCopyFile.encode(bytes)));
      boolean torn;
      synchronized (this) {
        hedgeComplete = true;
        torn = primaryFailed;
      }
      if (torn) {
        tornAfterHedge(null);
      }
    }

    private void tornAfterHedge(Throwable cause) {
      primaryFailuresAfterHedge.incrementAndGet();
      LOG.warn(
          "Writing {} failed after its hedge copy {} had completed: the entry stays incomplete at"
              + " its name and this manager reads it from the copy (Spark's default manager cannot;"
              + " do not delete the copy){}",
          entry,
          hedgeName,
          cause == null ? "" : ": " + cause);
    }

    /**
     * Neither copy completed: remove both (the hedge, then the name, which is ours), as a failed
     * write without hedging does.
     */
    IOException failed(StreamStateException e) {
      IOException failure = new IOException("Cannot write " + entry + ": " + e.getMessage(), e);
      try {
        dir.delete(hedgeName);
      } catch (RuntimeException suppressed) {
        failure.addSuppressed(suppressed);
      }
      try {
        primary.withdraw();
      } catch (RuntimeException suppressed) {
        failure.addSuppressed(suppressed);
      }
      return failure;
    }

    /**
     * Called by the writer for the copy that lost, once it completed too: both copies are then
     * complete and equal, and the hedge copy is the one removed.
     */
    @Override
    public boolean delete(String name) {
      if (name.equals(primaryName)) {
        LOG.debug("{} completed after its hedge copy; deleting {}", entry, hedgeName);
      }
      return dir.delete(hedgeName);
    }

    /** The primary is late: its DataNodes become suspect, and the copy is placed elsewhere. */
    @Override
    public void reportLateWrite(String name) {
      if (name.equals(primaryName)) {
        dir.reportLateWrite(name);
      }
    }

    @Override
    public boolean isSuspectedSlow(String name) {
      return false;
    }

    @Override
    public InputStream open(String name) {
      throw new UnsupportedOperationException("open " + name);
    }

    @Override
    public List<FileInfo> list(String prefix) {
      throw new UnsupportedOperationException("list " + prefix);
    }

    @Override
    public String describe() {
      return entry.getParent().toString();
    }
  }

  /** An in-memory stream with Hadoop's seek and positioned reads. */
  private static final class SeekableBytes extends ByteArrayInputStream
      implements Seekable, PositionedReadable {
    SeekableBytes(byte[] bytes) {
      super(bytes);
    }

    @Override
    public synchronized void seek(long pos) throws IOException {
      if (pos < 0 || pos > count) {
        throw new EOFException("Cannot seek to " + pos + " of " + count + " bytes");
      }
      this.pos = (int) pos;
    }

    @Override
    public synchronized long getPos() {
      return pos;
    }

    @Override
    public boolean seekToNewSource(long targetPos) {
      return false;
    }

    @Override
    public int read(long position, byte[] buffer, int offset, int length) {
      if (position >= count) {
        return -1;
      }
      int n = (int) Math.min(length, count - position);
      System.arraycopy(buf, (int) position, buffer, offset, n);
      return n;
    }

    @Override
    public void readFully(long position, byte[] buffer, int offset, int length) throws IOException {
      if (position < 0 || position + length > count) {
        throw new EOFException("Cannot read " + length + " bytes at " + position);
      }
      System.arraycopy(buf, (int) position, buffer, offset, length);
    }

    @Override
    public void readFully(long position, byte[] buffer) throws IOException {
      readFully(position, buffer, 0, buffer.length);
    }
  }
}
