package io.streamstate.spark.reliability;

import io.streamstate.core.format.LogJournalFile;
import io.streamstate.hadoop.ExclusiveCreateLocalFileSystem;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * {@code faultfs:///abs/path}: the local disk with atomic create-if-absent (declared by path
 * capability, so both the provider's {@code HadoopStorage} and {@code
 * RenameFreeCheckpointFileManager} use {@code create(overwrite=false)}), failing the calls the
 * installed {@link FaultPlan} names. Spark's own checkpoint files and the provider's state files
 * both go through it. Register with {@code spark.hadoop.fs.faultfs.impl}.
 */
public class FaultInjectingFileSystem extends ExclusiveCreateLocalFileSystem {
  public static final String SCHEME = "faultfs";

  /** The {@code faultfs:} URI of a local directory. */
  static String uriOf(java.nio.file.Path local) {
    return SCHEME + "://" + local.toAbsolutePath();
  }

  private FaultPlan.StorageFault before(FaultPlan.Op op, Path f) throws IOException {
    return FaultPlan.beforeCall(op, toLocal(f).toString());
  }

  private static IOException after(FaultPlan.StorageFault fault, FaultPlan.Op op, Path f) {
    return new IOException("Injected fault " + fault + " after " + op + " " + f);
  }

  @Override
  public FSDataOutputStream create(
      Path f,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.CREATE, f);
    FSDataOutputStream out =
        super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    if (fault == null) {
      return new FSDataOutputStream(new SyncFaultStream(out, f, toLocal(f)), null);
    }
    if (f.getName().endsWith(".journal") || f.getName().startsWith(LogJournalFile.NAME_PREFIX)) {
      // A journal is created empty and appended to later: the create itself fails after taking
      // the name (the empty journal is left for the sweep).
      out.close();
      throw after(fault, FaultPlan.Op.CREATE, f);
    }
    if (fault.kind() == FaultPlan.Kind.TORN) {
      return new FSDataOutputStream(new TornStream(out, fault, f), null);
    }
    return new FSDataOutputStream(new FailAfterCloseStream(out, fault, f), null);
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.OPEN, f);
    FSDataInputStream in = super.open(f, bufferSize);
    if (fault != null) {
      in.close();
      throw after(fault, FaultPlan.Op.OPEN, f);
    }
    return in;
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.LIST, f);
    FileStatus[] listed = super.listStatus(f);
    if (fault != null) {
      throw after(fault, FaultPlan.Op.LIST, f);
    }
    return listed;
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.DELETE, f);
    boolean deleted = super.delete(f, recursive);
    FaultPlan plan = deleted ? FaultPlan.forPath(toLocal(f).toString()) : null;
    if (plan != null) {
      plan.onDeleted(toLocal(f).toString());
    }
    if (fault != null) {
      throw after(fault, FaultPlan.Op.DELETE, f);
    }
    return deleted;
  }

  /**
   * A stream whose {@code hsync}s are calls the plan may fail: before syncing (the bytes written
   * may still be in the file, as on HDFS after a pipeline error), after syncing, torn (the file is
   * cut to what was synced before plus half of what this sync was to sync), or stalled.
   */
  private final class SyncFaultStream extends OutputStream
      implements org.apache.hadoop.fs.Syncable, org.apache.hadoop.fs.StreamCapabilities {
    private final FSDataOutputStream out;
    private final Path path;
    private final java.nio.file.Path local;
    private long written;
    private long synced;

    SyncFaultStream(FSDataOutputStream out, Path path, java.nio.file.Path local) {
      this.out = out;
      this.path = path;
      this.local = local;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
      written++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
      written += len;
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void hflush() throws IOException {
      out.hflush();
    }

    @Override
    public void hsync() throws IOException {
      FaultPlan.StorageFault fault = before(FaultPlan.Op.SYNC, path);
      if (fault != null && fault.kind() == FaultPlan.Kind.TORN) {
        out.flush();
        long keep = synced + (written - synced) / 2;
        try (java.nio.channels.FileChannel ch =
            java.nio.channels.FileChannel.open(local, java.nio.file.StandardOpenOption.WRITE)) {
          ch.truncate(keep);
          ch.force(false);
        }
        throw new IOException("Injected fault " + fault + ": torn sync of " + path);
      }
      out.hsync();
      if (fault != null) {
        throw after(fault, FaultPlan.Op.SYNC, path);
      }
      synced = written;
    }

    @Override
    public boolean hasCapability(String capability) {
      return out.hasCapability(capability);
    }

    @Override
    public void close() throws IOException {
      out.close();
    }
  }

  /** Writes everything, closes (the file is complete), then fails. */
  private static final class FailAfterCloseStream extends OutputStream {
    private final FSDataOutputStream out;
    private final FaultPlan.StorageFault fault;
    private final Path path;

    FailAfterCloseStream(FSDataOutputStream out, FaultPlan.StorageFault fault, Path path) {
      this.out = out;
      this.fault = fault;
      this.path = path;
    }

    @Override
    public void write(int b) throws IOException {
      out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      out.write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      out.flush();
    }

    @Override
    public void close() throws IOException {
      out.close();
      throw after(fault, FaultPlan.Op.CREATE, path);
    }
  }

  /**
   * Keeps what is written; at close writes only its first half to the file and fails, as a writer
   * that died mid-write leaves it on local disk or HDFS.
   */
  private static final class TornStream extends OutputStream {
    private final FSDataOutputStream out;
    private final FaultPlan.StorageFault fault;
    private final Path path;
    private final ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    private boolean closed;

    TornStream(FSDataOutputStream out, FaultPlan.StorageFault fault, Path path) {
      this.out = out;
      this.fault = fault;
      this.path = path;
    }

    @Override
    public void write(int b) {
      buffer.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) {
      buffer.write(b, off, len);
    }

    @Override
    public void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      byte[] bytes = buffer.toByteArray();
      out.write(bytes, 0, bytes.length / 2);
      out.close();
      throw new IOException("Injected fault " + fault + ": torn " + path);
    }
  }
}
