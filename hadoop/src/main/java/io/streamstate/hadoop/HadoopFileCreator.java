package io.streamstate.hadoop;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.ContentWriter;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;

/**
 * How a {@link HadoopStorage} writes a new file on a Hadoop file system other than local disk: t0
 * claim the name (HDFS, single writer) or open a stream that publishes at close (object stores), t1
 * write and sync, t2 publish by closing; after a failure before close, withdraw what was written.
 * The create-if-absent {@link CreateIfAbsent.Method method} chosen when the storage opened decides
 * each step; the outcomes are those of {@link HadoopStorage}'s class comment ("Outcomes of
 * create"). Every create goes through {@link DataNodePlacement}, and the writes in flight (creates,
 * open appendable files) are kept by name where pipelines are tracked, for late reports.
 */
final class HadoopFileCreator {
  private final FileSystem fs;
  private final Path root;
  private final CreateIfAbsent.Method method;

  /** How new files are placed on DataNodes (untracked where there are none). */
  private final DataNodePlacement placement;

  /**
   * The creates in flight and the open appendable files, by name, where pipelines are tracked: what
   * {@link #reportLateWrite} and {@link #isSuspectedSlow} look at.
   */
  private final Map<String, DataNodePlacement.TrackedWrite> writing = new ConcurrentHashMap<>();

  HadoopFileCreator(
      FileSystem fs, Path root, CreateIfAbsent.Method method, DataNodePlacement placement) {
    this.fs = fs;
    this.root = root;
    this.method = method;
    this.placement = placement;
  }

  /** Creates {@code name} at {@code path} with {@code content}: t0, t1, t2. */
  void create(String name, Path path, ContentWriter content) {
    // t0: claim the name (HDFS, single writer) or open a stream that publishes at close (object
    // stores). Nothing is written yet: failures here are retryable.
    FSDataOutputStream out = openNew(name, path);
    DataNodePlacement.TrackedWrite tracked = placement.track(out);
    boolean tracking = placement.tracksPipelines();
    if (tracking) {
      writing.put(name, tracked); // until it returns: a late report finds its pipeline
    }
    try {
      OutputStream publishing = new CloseShieldStream(out, tracked);
      // t1: write and make it durable before close, so that a close that succeeds publishes
      // complete, synced content. Any failure withdraws what was written.
      try {
        content.writeTo(publishing);
        out.flush();
        if (out.hasCapability(StreamCapabilities.HSYNC)) {
          tracked.hsync();
        }
      } catch (IOException e) {
        withdraw(name, path, out, e);
        throw new RetryableException("Cannot write " + where(name) + ": " + e, e);
      } catch (UncheckedIOException e) {
        withdraw(name, path, out, e);
        throw new RetryableException("Cannot write " + where(name) + ": " + e.getCause(), e);
      } catch (RuntimeException | Error e) {
        withdraw(name, path, out, e);
        throw e;
      }
      // t2: close publishes (object stores) or completes (HDFS) the file.
      publish(name, out);
    } finally {
      if (tracking) {
        writing.remove(name, tracked);
      }
    }
  }

  /**
   * Watches {@code out}, the stream of the appendable file {@code name}, until {@link #unwatch}: a
   * late report of {@code name} finds its pipeline.
   */
  DataNodePlacement.TrackedWrite watch(String name, FSDataOutputStream out) {
    DataNodePlacement.TrackedWrite tracked = placement.track(out);
    if (placement.tracksPipelines()) {
      writing.put(name, tracked);
    }
    return tracked;
  }

  /** The appendable file {@code name} is closing: no longer watched. */
  void unwatch(String name, DataNodePlacement.TrackedWrite tracked) {
    writing.remove(name, tracked);
  }

  /** The write in flight of {@code name}, if watched, is late: its DataNodes become suspect. */
  void reportLateWrite(String name) {
    DataNodePlacement.TrackedWrite w = writing.get(name);
    if (w != null) {
      w.reportLate();
    }
  }

  /** Whether the watched write of {@code name} goes through a suspect that could be avoided. */
  boolean isSuspectedSlow(String name) {
    DataNodePlacement.TrackedWrite w = writing.get(name);
    return w != null && w.isSuspectedSlow();
  }

  FSDataOutputStream openNew(String name, Path path) {
    try {
      switch (method) {
        case EXCLUSIVE_CREATE:
          return placement.create(path, false);
        case CONDITIONAL_CREATE:
          return createConditionally(name, path);
        case SINGLE_WRITER:
          if (fs.exists(path)) {
            throw new FileAlreadyExistsException(name);
          }
          return placement.create(path, false);
        default:
          throw new IllegalStateException("Unexpected create method " + method);
      }
    } catch (IOException e) {
      if (CreateIfAbsent.isNameTaken(e)) {
        throw nameTaken(name, e);
      }
      if (e instanceof InterruptedIOException
          && method != CreateIfAbsent.Method.CONDITIONAL_CREATE) {
        // A timed-out create RPC may have executed: the name may now exist, claimed by us.
        throw new OutcomeUnknownException(
            "Creating " + where(name) + " timed out or was interrupted; the name may exist: " + e,
            e);
      }
      throw new RetryableException("Cannot create " + where(name) + ": " + e, e);
    }
  }

  private FSDataOutputStream createConditionally(String name, Path path) throws IOException {
    try {
      // No existence probes: the store checks atomically at close (If-None-Match: *).
      return (FSDataOutputStream)
          fs.createFile(path)
              .overwrite(false)
              .recursive()
              .must(CreateIfAbsent.CONDITIONAL_CREATE_CAPABILITY, true)
              .build();
    } catch (IllegalArgumentException | UnsupportedOperationException e) {
      // A store that declared the capability but refuses the option.
      throw new UnsupportedException(
          "Cannot create "
              + where(name)
              + " with "
              + CreateIfAbsent.CONDITIONAL_CREATE_CAPABILITY
              + ": "
              + e,
          e);
    }
  }

  /** After a failure before close: leave nothing of ours at the name, or say it may be there. */
  void withdraw(String name, Path path, FSDataOutputStream out, Throwable cause) {
    if (out.hasCapability(StreamCapabilities.ABORTABLE_STREAM)) {
      // The stream publishes only at close (S3A): abort() drops it and any multipart upload.
      out.abort();
      return;
    }
    boolean closed = closeQuietly(out, cause);
    if (method == CreateIfAbsent.Method.CONDITIONAL_CREATE && !closed) {
      // A non-abortable conditional stream whose close failed: it may have published our partial
      // content, or been refused because another writer's file is there. We cannot tell which.
      throw new OutcomeUnknownException(
          "Write of "
              + where(name)
              + " failed ("
              + cause
              + ") and closing it failed too; a"
              + " partial file may be published.",
          cause);
    }
    // HDFS and single-writer stores show the partial file, and the name is ours (created with
    // overwrite=false): delete it.
    try {
      fs.delete(path, false);
    } catch (IOException e) {
      OutcomeUnknownException unknown =
          new OutcomeUnknownException(
              "Write of "
                  + where(name)
                  + " failed ("
                  + cause
                  + ") and the partial file could not"
                  + " be removed: "
                  + e,
              cause);
      unknown.addSuppressed(e);
      throw unknown;
    }
  }

  private static boolean closeQuietly(OutputStream out, Throwable cause) {
    try {
      out.close();
      return true;
    } catch (IOException | RuntimeException e) {
      cause.addSuppressed(e);
      return false;
    }
  }

  private void publish(String name, FSDataOutputStream out) {
    try {
      out.close();
    } catch (IOException e) {
      if (method == CreateIfAbsent.Method.CONDITIONAL_CREATE
          && CreateIfAbsent.isConditionalCreateRefused(e)) {
        // 412: an object exists. (Also the answer to an SDK retry of our own PUT that had
        // succeeded: the caller tells the two apart by content, as for any name taken.)
        throw nameTaken(name, e);
      }
      throw new OutcomeUnknownException(
          "Wrote " + where(name) + " but closing it failed; it may or may not be published: " + e,
          e);
    } catch (RuntimeException e) {
      throw new OutcomeUnknownException(
          "Wrote " + where(name) + " but closing it failed; it may or may not be published: " + e,
          e);
    }
  }

  private static FileAlreadyExistsException nameTaken(String name, Throwable cause) {
    FileAlreadyExistsException e = new FileAlreadyExistsException(name);
    e.initCause(cause);
    return e;
  }

  private String where(String name) {
    return root + "/" + name;
  }

  /**
   * What the {@link ContentWriter} writes to. Its {@code close()} only flushes: closing the real
   * stream is publishing, and that is the storage's step (t2), never the writer's.
   */
  private static final class CloseShieldStream extends FilterOutputStream {
    private final DataNodePlacement.TrackedWrite tracked;

    CloseShieldStream(OutputStream out, DataNodePlacement.TrackedWrite tracked) {
      super(out);
      this.tracked = tracked;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len); // FilterOutputStream would write byte by byte
      tracked.wrote(len);
    }

    @Override
    public void close() throws IOException {
      out.flush();
    }
  }
}
