package io.streamstate.spark.reliability;

import io.streamstate.core.format.LogJournalFile;
import io.streamstate.hadoop.SupportsDataNodePipelines;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Options.ChecksumOpt;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.PathFilter;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;
import org.apache.hadoop.util.Progressable;

/**
 * {@code faulthdfs://<nameservice>/path}: real HDFS (a {@link DistributedFileSystem}, so the
 * provider and the checkpoint file manager treat it as HDFS: create-if-absent at the NameNode,
 * appends with {@code hsync}, lease recovery, DataNode pipelines), failing the calls the installed
 * {@link FaultPlan} names, as {@link FaultInjectingFileSystem} does on local disk. Register with
 * {@code spark.hadoop.fs.faulthdfs.impl}; the authority is the HDFS nameservice (or NameNode).
 *
 * <p>The plan is looked up by the path part of the URI. What each fault does:
 *
 * <ul>
 *   <li>{@code error_before}, {@code stall}: as on local disk, for every operation;
 *   <li>{@code error_after}: the call is made, then fails; a create (not of a journal) fails at
 *       close, after the file is complete;
 *   <li>{@code torn} on a create: only the first half of the bytes is written, then the file is
 *       closed and the create fails;
 *   <li>on an {@code hsync}: the bytes written since the last sync are held in this stream and sent
 *       at the sync (so that a fault can cut them): {@code error_before} sends nothing and fails
 *       (the bytes go out with a later sync or at close, as HDFS may still deliver them), {@code
 *       error_after} syncs then fails, {@code torn} sends and syncs the first half, then fails, and
 *       the stream sends nothing more (a writer that died mid-packet).
 * </ul>
 *
 * <p>Each stream wraps the {@code HdfsDataOutputStream} ({@code getWrappedStream()} down to the DFS
 * stream), so the DataNode pipeline of an open file can still be read.
 */
public class FaultInjectingHdfs extends DistributedFileSystem implements SupportsDataNodePipelines {
  public static final String SCHEME = "faulthdfs";

  private FaultPlan.StorageFault before(FaultPlan.Op op, Path f) throws IOException {
    return FaultPlan.beforeCall(op, f.toUri().getPath());
  }

  private static IOException after(FaultPlan.StorageFault fault, FaultPlan.Op op, Path f) {
    return new IOException("Injected fault " + fault + " after " + op + " " + f);
  }

  /** The create every other create of a {@code DistributedFileSystem} ends in. */
  @Override
  public FSDataOutputStream create(
      Path f,
      FsPermission permission,
      EnumSet<CreateFlag> flags,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress,
      ChecksumOpt checksumOpt)
      throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.CREATE, f);
    FSDataOutputStream out =
        super.create(
            f, permission, flags, bufferSize, replication, blockSize, progress, checksumOpt);
    return faulted(out, f, fault);
  }

  private FSDataOutputStream faulted(FSDataOutputStream out, Path f, FaultPlan.StorageFault fault)
      throws IOException {
    if (fault != null
        && (f.getName().endsWith(".journal")
            || f.getName().startsWith(LogJournalFile.NAME_PREFIX))) {
      // A journal is created empty and appended to later: the create fails after taking the name.
      out.close();
      throw after(fault, FaultPlan.Op.CREATE, f);
    }
    // Wrapped once more, so that DataOutputStream's final methods (writeInt...) also reach it.
    return new FSDataOutputStream(new FaultStream(out, f, fault), null);
  }

  /**
   * The create with favoured DataNodes (while some are suspect): HDFS's builder for it ends in a
   * private create, so this file system places such files itself, through the same faults.
   */
  @Override
  public FSDataOutputStream create(Path path, boolean overwrite, List<String> favoredNodes)
      throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.CREATE, path);
    InetSocketAddress[] nodes = new InetSocketAddress[favoredNodes.size()];
    for (int i = 0; i < nodes.length; i++) {
      String node = favoredNodes.get(i);
      int colon = node.lastIndexOf(':');
      nodes[i] =
          InetSocketAddress.createUnresolved(
              node.substring(0, colon), Integer.parseInt(node.substring(colon + 1)));
    }
    FSDataOutputStream out =
        super.create(
            path,
            FsPermission.getFileDefault().applyUMask(FsPermission.getUMask(getConf())),
            overwrite,
            getConf().getInt("io.file.buffer.size", 4096),
            getDefaultReplication(path),
            getDefaultBlockSize(path),
            null,
            nodes);
    return faulted(out, path, fault);
  }

  /** The DataNodes of an open stream of this file system, first to last. */
  @Override
  public List<String> pipelineOf(OutputStream out) {
    OutputStream stream = out;
    for (int depth = 0; depth < 5; depth++) {
      if (stream instanceof DFSOutputStream dfsOut) {
        DatanodeInfo[] nodes = dfsOut.getPipeline();
        List<String> names = new ArrayList<>();
        for (DatanodeInfo node : nodes == null ? new DatanodeInfo[0] : nodes) {
          names.add(node.getXferAddr());
        }
        return List.copyOf(names);
      }
      if (!(stream instanceof FSDataOutputStream wrapper)) {
        return List.of();
      }
      stream = wrapper.getWrappedStream();
    }
    return List.of();
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

  /** What {@code listFiles} (the provider's listing) calls for each directory. */
  @Override
  protected RemoteIterator<LocatedFileStatus> listLocatedStatus(Path f, PathFilter filter)
      throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.LIST, f);
    RemoteIterator<LocatedFileStatus> listed = super.listLocatedStatus(f, filter);
    if (fault != null) {
      throw after(fault, FaultPlan.Op.LIST, f);
    }
    return listed;
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    FaultPlan.StorageFault fault = before(FaultPlan.Op.DELETE, f);
    boolean deleted = super.delete(f, recursive);
    if (fault != null) {
      throw after(fault, FaultPlan.Op.DELETE, f);
    }
    return deleted;
  }

  /**
   * An HDFS output stream that holds what is written until the next {@code hsync}, {@code hflush}
   * or close, so that a sync can fail before, after or halfway; and a create's fault at close.
   */
  private final class FaultStream extends FSDataOutputStream {
    private final FSDataOutputStream hdfs;
    private final Path path;
    private final FaultPlan.StorageFault createFault;
    private final ByteArrayOutputStream pending = new ByteArrayOutputStream();
    private boolean dead;
    private boolean closed;

    FaultStream(FSDataOutputStream hdfs, Path path, FaultPlan.StorageFault createFault)
        throws IOException {
      super(hdfs, null);
      this.hdfs = hdfs;
      this.path = path;
      this.createFault = createFault;
    }

    @Override
    public synchronized void write(int b) throws IOException {
      check();
      pending.write(b);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      check();
      pending.write(b, off, len);
    }

    private void check() throws IOException {
      if (dead) {
        throw new IOException("stream of " + path + " failed by an injected torn sync");
      }
    }

    /** Sends the held bytes (all of them, or the first half for a torn create). */
    private void send(boolean half) throws IOException {
      byte[] bytes = pending.toByteArray();
      pending.reset();
      hdfs.write(bytes, 0, half ? bytes.length / 2 : bytes.length);
    }

    @Override
    public synchronized void flush() throws IOException {
      check();
      // Held until a sync or close: a flush promises nothing on HDFS either.
    }

    @Override
    public synchronized void hflush() throws IOException {
      check();
      send(false);
      hdfs.hflush();
    }

    @Override
    public synchronized void hsync() throws IOException {
      check();
      FaultPlan.StorageFault fault = before(FaultPlan.Op.SYNC, path);
      if (fault != null && fault.kind() == FaultPlan.Kind.TORN) {
        send(true);
        hdfs.hsync();
        dead = true;
        throw new IOException("Injected fault " + fault + ": torn sync of " + path);
      }
      send(false);
      hdfs.hsync();
      if (fault != null) {
        throw after(fault, FaultPlan.Op.SYNC, path);
      }
    }

    @Override
    public synchronized void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      if (dead) {
        hdfs.close();
        return;
      }
      boolean torn = createFault != null && createFault.kind() == FaultPlan.Kind.TORN;
      send(torn);
      hdfs.close();
      if (torn) {
        throw new IOException("Injected fault " + createFault + ": torn " + path);
      }
      if (createFault != null) {
        throw after(createFault, FaultPlan.Op.CREATE, path);
      }
    }
  }
}
