package io.streamstate.hadoop;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.PendingFile;
import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

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
  private static final Logger LOG = LoggerFactory.getLogger(HadoopFileCreator.class);

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
    Pending file = openNew(name, path, false);
    // t1: write; publish() makes it durable before close, so that a close that succeeds publishes
    // complete, synced content. Any failure before close withdraws what was written.
    try {
      content.writeTo(file.stream());
    } catch (IOException e) {
      file.withdraw(e);
      throw new RetryableException("Cannot write " + where(name) + ": " + e, e);
    } catch (UncheckedIOException e) {
      file.withdraw(e);
      throw new RetryableException("Cannot write " + where(name) + ": " + e.getCause(), e);
    } catch (RuntimeException | Error e) {
      file.withdraw(e);
      throw e;
    }
    // t2: close publishes (object stores) or completes (HDFS) the file.
    try {
      file.publish();
    } catch (RetryableException e) {
      file.withdraw(e);
      throw e;
    }
  }

  /**
   * t0 of a create whose content comes later ({@link HadoopStorage#openNew}): the name is claimed
   * (HDFS, single writer) or a stream opened that publishes at close (object stores); with {@code
   * overwrite}, a file at the name is replaced instead of refused. Watched for late reports until
   * published or withdrawn.
   */
  Pending openNew(String name, Path path, boolean overwrite) {
    FSDataOutputStream out = openStream(name, path, overwrite);
    // A conditional create refused at close (412) may be the store refusing a retry of our own
    // PUT that had landed: the content written is digested, to compare with what is there.
    MessageDigest digest =
        method == CreateIfAbsent.Method.CONDITIONAL_CREATE && !overwrite ? sha256() : null;
    return new Pending(name, path, out, watch(name, out), digest);
  }

  /** A file of this creator being written: t1 through its stream, t2 by {@link #publish()}. */
  final class Pending implements PendingFile {
    private final String name;
    private final Path path;
    private final FSDataOutputStream out;
    private final DataNodePlacement.TrackedWrite tracked;
    private final OutputStream stream;

    /** The digest of what was written, on conditional creates; null elsewhere. */
    private final MessageDigest digest;

    private Pending(
        String name,
        Path path,
        FSDataOutputStream out,
        DataNodePlacement.TrackedWrite tracked,
        MessageDigest digest) {
      this.name = name;
      this.path = path;
      this.out = out;
      this.tracked = tracked;
      this.digest = digest;
      this.stream = new CloseShieldStream(out, tracked, digest);
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public OutputStream stream() {
      return stream;
    }

    @Override
    public void publish() {
      try {
        try {
          out.flush();
          if (out.hasCapability(StreamCapabilities.HSYNC)) {
            tracked.hsync();
          }
        } catch (IOException e) {
          if (!out.hasCapability(StreamCapabilities.ABORTABLE_STREAM)) {
            // End the stream (HDFS: its lease) now; the name stays ours until withdrawn, which a
            // hedged write that lost its primary needs. Streams that publish at close are left
            // for withdraw() to abort: closing one would publish the partial content.
            closeQuietly(out, e);
          }
          throw new RetryableException("Cannot write " + where(name) + ": " + e, e);
        }
        HadoopFileCreator.this.publish(name, path, out, digest);
      } finally {
        unwatch(name, tracked);
      }
    }

    @Override
    public void withdraw() {
      withdraw(new RetryableException("The write of " + where(name) + " was withdrawn"));
    }

    /** Withdraws after {@code cause}: a failed withdrawal says so, with the cause. */
    void withdraw(Throwable cause) {
      try {
        HadoopFileCreator.this.withdraw(name, path, out, cause);
      } finally {
        unwatch(name, tracked);
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

  /**
   * The stream of a new file at {@code path}, as the store creates one only if absent (or, with
   * {@code overwrite}, replacing what is there).
   */
  FSDataOutputStream openStream(String name, Path path, boolean overwrite) {
    try {
      switch (method) {
        case EXCLUSIVE_CREATE:
          return placement.create(path, overwrite);
        case CONDITIONAL_CREATE:
          return createConditionally(name, path, overwrite);
        case SINGLE_WRITER:
          if (!overwrite && fs.exists(path)) {
            throw new FileAlreadyExistsException(name);
          }
          return placement.create(path, overwrite);
        default:
          throw new IllegalStateException("Unexpected create method " + method);
      }
    } catch (IOException e) {
      if (!overwrite && CreateIfAbsent.isNameTaken(e)) {
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

  private FSDataOutputStream createConditionally(String name, Path path, boolean overwrite)
      throws IOException {
    try {
      var builder = fs.createFile(path).overwrite(overwrite).recursive();
      if (!overwrite) {
        // No existence probes: the store checks atomically at close (If-None-Match: *).
        builder.must(CreateIfAbsent.CONDITIONAL_CREATE_CAPABILITY, true);
      }
      return (FSDataOutputStream) builder.build();
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
    // HDFS and single-writer stores show the partial file at the name: delete it, unless another
    // writer's file took the name since (an overwrite by another attempt renamed over it, a torn
    // log entry set aside and written again; HDFS tells by file id, others cannot).
    try {
      long ours = FileIds.of(out);
      if (ours != FileIds.UNKNOWN) {
        long there;
        try {
          there = FileIds.of(fs.getFileStatus(path));
        } catch (FileNotFoundException e) {
          return;
        }
        if (there != ours) {
          LOG.debug("Not withdrawing {}: another writer's file (id {}) is there now", path, there);
          return;
        }
      }
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

  /**
   * t2: closes {@code out}. On a conditional create ({@code digest} not null) refused because an
   * object exists (412), the object is read back: if it holds exactly what was written, the create
   * succeeded. A 5xx answer to a PUT that had landed makes the client (the SDK, S3A) send it again,
   * and the store refuses the retry with 412; the first PUT was ours. (Another writer's object of
   * identical content cannot be told from ours; it is the same file.)
   */
  private void publish(String name, Path path, FSDataOutputStream out, MessageDigest digest) {
    try {
      out.close();
    } catch (IOException e) {
      if (method == CreateIfAbsent.Method.CONDITIONAL_CREATE
          && CreateIfAbsent.isConditionalCreateRefused(e)) {
        if (digest != null && holdsExactly(name, path, digest.digest(), e)) {
          LOG.info(
              "{}: the store refused the create (412) but holds exactly the content written (a"
                  + " retried request whose first attempt had succeeded): published",
              where(name));
          return;
        }
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

  /**
   * Whether the object at {@code path} has the SHA-256 {@code written}; if it cannot be read, the
   * outcome is unknown.
   */
  private boolean holdsExactly(String name, Path path, byte[] written, IOException refusal) {
    MessageDigest there = sha256();
    try (InputStream in = fs.open(path)) {
      byte[] buffer = new byte[64 * 1024];
      for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
        there.update(buffer, 0, n);
      }
    } catch (java.io.FileNotFoundException gone) {
      // Refused because the name existed, and deleted since: not ours (we never delete a name
      // we are still creating).
      return false;
    } catch (IOException e) {
      OutcomeUnknownException unknown =
          new OutcomeUnknownException(
              "The store refused to create "
                  + where(name)
                  + " because the name exists ("
                  + refusal
                  + "), and what is there could not be read to tell whether it is this write"
                  + " (a retried request whose first attempt succeeded): "
                  + e,
              refusal);
      unknown.addSuppressed(e);
      throw unknown;
    }
    return Arrays.equals(written, there.digest());
  }

  private static MessageDigest sha256() {
    try {
      return MessageDigest.getInstance("SHA-256");
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("Every Java platform has SHA-256", e);
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

    /** Digests what is written; null: not digested. */
    private final MessageDigest digest;

    CloseShieldStream(
        OutputStream out, DataNodePlacement.TrackedWrite tracked, MessageDigest digest) {
      super(out);
      this.tracked = tracked;
      this.digest = digest;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      tracked.wrote(1);
      if (digest != null) {
        digest.update((byte) b);
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len); // FilterOutputStream would write byte by byte
      tracked.wrote(len);
      if (digest != null) {
        digest.update(b, off, len);
      }
    }

    @Override
    public void close() throws IOException {
      out.flush();
    }
  }
}
