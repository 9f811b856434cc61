package io.streamstate.spark.checkpoint;

import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.hadoop.CreateIfAbsent;
import io.streamstate.hadoop.DataNodePlacement;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.ByteArrayOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.OutputStream;
import java.util.Optional;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The manager's plain-file path: a file written once at its final name with the store's own
 * create-if-absent (the table in {@link RenameFreeCheckpointFileManager}'s documentation), as a
 * stream that {@code close()} publishes and {@code cancel()} withdraws. On stores that take a name
 * at create, a log entry is buffered and published hedged ({@link HedgedLogWrites}).
 *
 * <p>Why this is not the storage layer's {@code Storage.create}: that call takes the whole content
 * up front and takes the name and writes it in one step, while Spark's {@code createAtomic} hands
 * out a stream of any length (its own providers write large files through it) whose name must be
 * taken at once on local disk and HDFS (so that a second writer fails at {@code createAtomic}, and
 * so that a hedge copy is only ever written for a name that is already ours), and offers overwrite
 * (docs/protocol.md, "Create-if-absent per store").
 */
final class DirectCreates {
  private static final Logger LOG = LoggerFactory.getLogger(DirectCreates.class);

  private final FileSystem fs;

  /** The raw local file system behind {@link #fs}; null elsewhere. */
  private final RawLocalFileSystem local;

  private final CreateIfAbsent.Method method;

  /** Where new files go on DataNodes (HDFS): away from suspect ones. */
  private final DataNodePlacement placement;

  /** Hedged log entry writes (see the manager); null where the store cannot hedge them. */
  private final HedgedLogWrites hedges;

  DirectCreates(
      FileSystem fs,
      RawLocalFileSystem local,
      CreateIfAbsent.Method method,
      DataNodePlacement placement,
      HedgedLogWrites hedges) {
    this.fs = fs;
    this.local = local;
    this.method = method;
    this.placement = placement;
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
   * @throws FileAlreadyExistsException the name is taken (and {@code overwrite} is false)
   */
  CancellableFSDataOutputStream create(Path path, boolean overwrite) throws IOException {
    switch (method) {
      case LOCAL_EXCLUSIVE:
        return LocalCreates.create(fs, local, path, overwrite);
      case EXCLUSIVE_CREATE:
        return createExclusive(path, overwrite);
      case CONDITIONAL_CREATE:
        return createConditional(path, overwrite);
      case SINGLE_WRITER:
        if (!overwrite && fs.exists(path)) {
          throw exists(path);
        }
        return createExclusive(path, overwrite);
      default:
        throw new IllegalStateException("Unexpected create method " + method);
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
        && SparkLogEntries.isHedgedLogEntry(path)) {
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
    private ByteArrayOutputStream buffer = new ByteArrayOutputStream(512);

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

  static void closeQuietly(OutputStream out) {
    try {
      out.close();
    } catch (IOException | RuntimeException e) {
      LOG.debug("Ignoring failure to close a cancelled stream: {}", e.toString());
    }
  }

  /** The name is taken, as a create of it finds. */
  static FileAlreadyExistsException exists(Path path) {
    return new FileAlreadyExistsException(path + " already exists");
  }

  static FileAlreadyExistsException nameTaken(Path path, Throwable cause) {
    FileAlreadyExistsException e =
        new FileAlreadyExistsException(path + " already exists (another writer created it first)");
    e.initCause(cause);
    return e;
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
