package io.streamstate.spark.checkpoint;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.PendingFile;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import io.streamstate.spark.shared.checkpoint.CheckpointProcessState;
import io.streamstate.spark.shared.checkpoint.HedgedLogWrites;
import io.streamstate.spark.shared.checkpoint.RocksDbUploads;
import io.streamstate.spark.shared.checkpoint.TakenNames;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Options;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The manager's plain-file path: a file written once at its final name by the storage layer's
 * create ({@link HadoopStorage#openNew}, the one implementation of create-if-absent per store: the
 * table in docs/protocol.md, "Create-if-absent per store"), as a stream that {@code close()}
 * publishes and {@code cancel()} withdraws. On stores that take a name at create, a log entry, and
 * a changelog or snapshot zip of Spark's RocksDB provider ({@link RocksDbUploads}), is buffered and
 * published hedged ({@link HedgedLogWrites}).
 *
 * <p>This class only adapts: one storage per directory the manager writes in, Spark's stream and
 * Hadoop's exceptions ({@code org.apache.hadoop.fs.FileAlreadyExistsException} for a taken name,
 * which Spark's {@code HDFSMetadataLog} reports as concurrent queries on one checkpoint; {@code
 * IOException} for the rest). A write whose publish fails is withdrawn, so that Spark's retry of it
 * can take the name again.
 */
final class DirectCreates {
  private static final Logger LOG = LoggerFactory.getLogger(DirectCreates.class);

  private final FileSystem fs;
  private final CreateIfAbsent.Method method;
  private final ProcessResources resources;

  /** Hedged log entry writes (see the manager); null where the store cannot hedge them. */
  private final HedgedLogWrites hedges;

  /** The storage of each directory written in, by qualified path. */
  private final Map<Path, HadoopStorage> byDirectory = new ConcurrentHashMap<>();

  DirectCreates(
      FileSystem fs,
      CreateIfAbsent.Method method,
      ProcessResources resources,
      HedgedLogWrites hedges) {
    this.fs = fs;
    this.method = method;
    this.resources = resources;
    this.hedges = hedges;
  }

  /**
   * How the store at {@code path} creates a file only if absent.
   *
   * @throws UnsupportedException the store gives no create-if-absent and single-writer mode is not
   *     accepted
   */
  static CreateIfAbsent.Method detect(
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

  /**
   * Creates {@code path} at its final name as the store allows.
   *
   * @throws IOException Hadoop's {@code FileAlreadyExistsException} if the name is taken (and
   *     {@code overwrite} is false, {@link TakenNames})
   */
  CancellableFSDataOutputStream create(Path path, boolean overwrite) throws IOException {
    Path qualified = fs.makeQualified(path);
    HadoopStorage dir =
        byDirectory.computeIfAbsent(
            qualified.getParent(), d -> HadoopStorage.openWith(fs, d, method, resources));
    boolean logEntry = !overwrite && SparkLogEntries.isHedgedLogEntry(path);
    boolean rocksDbUpload = overwrite && RocksDbUploads.isUploadName(path.getName());
    if (rocksDbUpload && hedges != null) {
      // Spark rewrites this name (a retry of the version): a hedge copy an earlier write left
      // beside it is of that write, and would be read instead of this one. It goes first, so that
      // a copy beside a name is always of the name's current write (HedgedLogWrites).
      removeHedgeCopy(dir, path);
    }
    boolean showsWhileWritten =
        method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE
            || method == CreateIfAbsent.Method.EXCLUSIVE_CREATE;
    PendingFile file;
    try {
      // Where a file shows at its name from create on, an overwrite too takes a free name only:
      // replacing at create would destroy the file there before the new one is whole.
      file = dir.openNew(qualified.getName(), overwrite && !showsWhileWritten);
    } catch (FileAlreadyExistsException e) {
      if (overwrite) {
        return replacing(dir, path);
      }
      throw TakenNames.nameTaken(path, e);
    } catch (RetryableException | OutcomeUnknownException e) {
      throw ioFailure("Cannot create " + path, e);
    }
    // The name is ours from here (on stores that take it at create): a failed publish or a cancel
    // withdraws it, so no partial file of ours stays behind.
    if ((logEntry || rocksDbUpload)
        && hedges != null
        && hedges.enabled()
        && method == CreateIfAbsent.Method.EXCLUSIVE_CREATE) {
      // A log entry, or a changelog or snapshot zip of Spark's RocksDB provider: buffered, and
      // published hedged at close (HedgedLogWrites). A log entry's name is already ours, so the
      // hedge cannot make another writer of this batch lose or win; an upload's overwrite makes
      // the last writer win, as without hedging.
      HedgeableBuffer buffer =
          new HedgeableBuffer(
              file.stream(),
              logEntry ? HedgedLogWrites.MAX_HEDGED_BYTES : RocksDbUploads.MAX_HEDGED_BYTES);
      return new DirectOutputStream(
          buffer,
          path,
          () -> {
            if (buffer.spilled()) {
              publishOrWithdraw(path, file);
            } else {
              hedges.publish(dir, path, file, buffer.bytes());
            }
          },
          file::withdraw);
    }
    return new DirectOutputStream(
        file.stream(), path, () -> publishOrWithdraw(path, file), file::withdraw);
  }

  /**
   * A rewrite of {@code path}, whose name is taken, on a store where a file shows at its name while
   * written (local disk, HDFS): as Spark's default manager writes it, a temp file beside it,
   * renamed over the name at close, so that the file there stays whole until the new one is, and a
   * cancel removes only the temp file. Two attempts of one task overwriting one state file
   * (speculation, a retry beside a zombie) then leave one whole file whichever is killed. Spark's
   * providers rewrite a name only when a version is written again, so the rename stays off their
   * usual path.
   */
  private CancellableFSDataOutputStream replacing(HadoopStorage dir, Path path) throws IOException {
    String tempName = "." + path.getName() + "." + UUID.randomUUID() + ".tmp";
    Path temp = new Path(path.getParent(), tempName);
    PendingFile file;
    try {
      file = dir.openNew(tempName, false);
    } catch (RetryableException | OutcomeUnknownException e) {
      throw ioFailure("Cannot create " + temp + " to replace " + path, e);
    }
    return new DirectOutputStream(
        file.stream(),
        path,
        () -> {
          publishOrWithdraw(temp, file);
          renameOver(temp, path);
        },
        file::withdraw);
  }

  /**
   * Renames {@code temp} over {@code path}, replacing it: on local disk {@code rename(2)}; on HDFS
   * its rename with {@code OVERWRITE} (atomic at the NameNode); on other stores that take a name at
   * create, their rename, or delete and rename where that refuses an existing target. On failure
   * the temp file is removed and the name keeps what it had.
   */
  private void renameOver(Path temp, Path path) throws IOException {
    RawLocalFileSystem local = CreateIfAbsent.rawLocal(fs);
    try {
      if (local != null) {
        java.nio.file.Path target = local.pathToFile(path).toPath();
        Files.move(local.pathToFile(temp).toPath(), target, StandardCopyOption.ATOMIC_MOVE);
        // A checksum side file of an earlier write by Hadoop's local file system would go stale.
        Files.deleteIfExists(target.resolveSibling("." + target.getFileName() + ".crc"));
        return;
      }
      if (renameWithOverwrite(temp, path)) {
        return;
      }
      if (!fs.rename(temp, path)) {
        fs.delete(path, false);
        if (!fs.rename(temp, path)) {
          throw new IOException("Cannot rename " + temp + " over " + path);
        }
      }
    } catch (IOException | RuntimeException e) {
      try {
        fs.delete(temp, false);
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
  }

  /**
   * HDFS's public {@code rename(src, dst, OVERWRITE)}, called by reflection so that this class
   * loads without HDFS's client classes; false where the file system has no public one.
   */
  private boolean renameWithOverwrite(Path temp, Path path) throws IOException {
    Method rename;
    try {
      rename = fs.getClass().getMethod("rename", Path.class, Path.class, Options.Rename[].class);
    } catch (NoSuchMethodException e) {
      return false;
    }
    try {
      rename.invoke(fs, temp, path, new Options.Rename[] {Options.Rename.OVERWRITE});
      return true;
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof IOException io) {
        throw io;
      }
      throw new IOException("Cannot rename " + temp + " over " + path, e.getCause());
    } catch (IllegalAccessException e) {
      return false;
    }
  }

  /** Deletes the hedge copy beside {@code path}, if there is one. */
  private static void removeHedgeCopy(HadoopStorage dir, Path path) throws IOException {
    try {
      dir.delete(HedgedLogWrites.hedgePath(path).getName());
    } catch (RetryableException e) {
      throw ioFailure("Cannot remove the hedge copy of " + path + " before rewriting it", e);
    }
  }

  /**
   * Publishes {@code file}; if that fails, withdraws it (nothing of ours stays at the name, so that
   * Spark's retry of the write can take it again) and throws an {@code IOException}.
   */
  private static void publishOrWithdraw(Path path, PendingFile file) throws IOException {
    try {
      file.publish();
    } catch (FileAlreadyExistsException e) {
      // Refused at completion (conditional create): the file there is another writer's.
      throw TakenNames.nameTaken(path, e);
    } catch (RetryableException | OutcomeUnknownException e) {
      IOException failure = ioFailure("Cannot write " + path, e);
      try {
        file.withdraw();
      } catch (RuntimeException suppressed) {
        failure.addSuppressed(suppressed);
      }
      throw failure;
    }
  }

  /**
   * The storage layer's failure as Spark expects it: an interruption stays the interruption it was
   * ({@code InterruptedIOException}, {@code ClosedByInterruptException}), which Spark takes for a
   * query being stopped, not failing; anything else is an {@code IOException} carrying it.
   */
  private static IOException ioFailure(String what, RuntimeException e) {
    for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
      if (c instanceof InterruptedIOException || c instanceof ClosedByInterruptException) {
        return (IOException) c;
      }
    }
    return new IOException(what + ": " + e.getMessage(), e);
  }

  /**
   * Buffers a file in memory until close; past {@code limit} bytes it spills into the file's own
   * stream and the write goes on unhedged.
   */
  private static final class HedgeableBuffer extends OutputStream {
    private final OutputStream out;
    private final int limit;
    private ByteArrayOutputStream buffer = new ByteArrayOutputStream(512);

    HedgeableBuffer(OutputStream out, int limit) {
      this.out = out;
      this.limit = limit;
    }

    @Override
    public void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      if (buffer == null) {
        out.write(b, off, len);
      } else if (buffer.size() + (long) len > limit) {
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

  @SuppressWarnings("unchecked")
  static <T extends Throwable> RuntimeException sneakyThrow(Throwable t) throws T {
    throw (T) t;
  }

  /** An I/O step of a stream's end. */
  interface IoAction {
    void run() throws IOException;
  }

  /**
   * The stream {@code createAtomic} returns: writes go straight to the store's stream at the final
   * name; {@code close()} publishes (completes) it, {@code cancel()} withdraws it. Both happen at
   * most once, whichever comes first.
   */
  static final class DirectOutputStream extends CancellableFSDataOutputStream {
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
