package io.streamstate.bench.spark;

import io.streamstate.bench.spark.LatencyModel.Op;
import io.streamstate.bench.spark.SimulatedCounters.Area;
import io.streamstate.core.ProcessResources;
import io.streamstate.hadoop.SupportsDataNodePipelines;
import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.net.URI;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FSDataOutputStreamBuilder;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LeaseRecoverable;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A bench-only Hadoop file system, scheme {@code simfs}, that stores files on the local disk and
 * adds latency per operation kind from a seeded {@link LatencyModel}; it counts operations by kind,
 * and separately those on paths under a checkpoint's {@code state/} directory and those under a
 * {@code sink/} directory (the benchmark's file sink output).
 *
 * <p>{@code simfs://<profile>[-nostate][.<tag>]/<absolute local path>}: the authority names the
 * latency profile ({@code none}, {@code slow-datanode}, {@code slow-datanode-periods}, {@code
 * busy-namenode}, {@code s3}); a {@code .<tag>} makes a separate instance (own counters, freshly
 * seeded model). A {@code -nostate} suffix ({@code simfs://s3-nostate/...}) makes it the
 * no-durability baseline: files under a {@code /state/} directory are accepted and discarded
 * (nothing is created, listings of them are empty), everything else (Spark's offset and commit
 * logs) is stored as usual.
 *
 * <p>Register with {@code
 * spark.hadoop.fs.simfs.impl=io.streamstate.bench.spark.SimulatedFileSystem}. Settings: {@code
 * fs.simfs.seed} (default 42), {@code fs.simfs.stallScale} (default 1.0; scales slow-datanode
 * stalls, slow DataNode periods and the gaps between them, and busy-namenode pauses), {@code
 * fs.simfs.latencyScale} (default 1.0; 0 draws and counts every latency but never sleeps, for
 * tests), {@code fs.simfs.datanodes} (default 6) and {@code fs.simfs.replication} (default 3): the
 * DataNodes of slow-datanode-periods and how many a file's pipeline holds.
 *
 * <p>On slow-datanode-periods every file is written through a pipeline of DataNodes ({@link
 * DataNodeCluster}) picked at create and kept for its life, and it implements {@link
 * SupportsDataNodePipelines}: {@link #pipelineOf} names a stream's DataNodes ({@code dn1} .. {@code
 * dnN}) and {@link #create(Path, boolean, List)} places a file on favoured ones. Its data writes
 * and syncs wait for a slow DataNode of their pipeline ({@code slowNodeWaits}, {@code
 * slowNodeWaitMs}). On the other profiles streams have no pipeline ({@code pipelineOf} is empty)
 * and favoured nodes are ignored.
 *
 * <p>All I/O goes through {@code java.nio} (no child processes, unlike Hadoop's local file system
 * without its native library), except reads, which use {@link RawLocalFileSystem#open} (no fork).
 * {@code create(path, overwrite=false)} is atomic ({@code CREATE_NEW}), so it declares the
 * conditional-create capability that streamstate's {@code HadoopStorage} requires; latency of the
 * data write is added at {@code close()}, as an object store's PUT or the last packet's ack.
 *
 * <p>What it draws and counts lives apart: the latency profiles in {@link LatencyModel} (with the
 * DataNodes of {@link DataNodeCluster}), the counters in {@link SimulatedCounters}. What is left
 * (about 700 lines) is one job, Hadoop's {@code FileSystem} API over local files: each operation,
 * its stream with leases and syncs, its builder; split further, each piece would be a few methods
 * that reach back into this class for the profile, the counters and the open streams.
 */
public final class SimulatedFileSystem extends FileSystem
    implements LeaseRecoverable, SupportsDataNodePipelines {
  // java.nio.file.Path and java.nio.file.FileAlreadyExistsException stay qualified: Hadoop's Path
  // and FileAlreadyExistsException, which this file system's API speaks, have the same names.
  public static final String SCHEME = "simfs";
  private static final String CONDITIONAL_CREATE = "fs.option.create.conditional.overwrite";
  private static final String EXCLUSIVE_CREATE = "streamstate.fs.create.exclusive";
  private static final String APPEND_HSYNC = "streamstate.fs.append.hsync";

  /** The block size after which a synced stream is charged another block allocation. */
  static final long BLOCK_BYTES = 128L << 20;

  private static final String NO_STATE_SUFFIX = "-nostate";

  /**
   * streamstate's durable files: {@code state/<op>/<partition>[/<store>]/{changelog,snapshot,sst}}
   * and the segments of group commit, {@code state/_segments} (Spark's own state metadata, such as
   * the schema files, is kept).
   */
  private static final Pattern STREAMSTATE_FILES =
      Pattern.compile(
          "/state/(?:\\d+/\\d+/(?:[^/]+/)?(?:changelog|snapshot|sst)|_segments)(?:/|$)");

  /**
   * What every instance in a process shares, a component of its {@link ProcessResources}: Hadoop
   * makes this file system by class name, so {@link #initialize} takes the process's owner.
   */
  private static final class Shared {
    /** Streams still open, by local path, as HDFS leases: {@link #recoverLease} fences them. */
    final Map<String, DelayedCloseStream> openStreams = new ConcurrentHashMap<>();

    /** Counters per authority (profile), shared by every instance of it in the process. */
    final Map<String, SimulatedCounters> counters = new ConcurrentHashMap<>();

    static Shared of(ProcessResources resources) {
      return resources.component(Shared.class, Shared::new);
    }
  }

  private Shared shared;
  private URI uri;
  private LatencyModel model;
  private boolean discardState;
  private SimulatedCounters counters;
  private final RawLocalFileSystem local = new RawLocalFileSystem();

  /**
   * The counters of {@code authority} in this process ({@link ProcessResources#shared()}; created
   * empty if nothing used it yet).
   */
  public static SimulatedCounters counters(String authority) {
    return Shared.of(ProcessResources.shared())
        .counters
        .computeIfAbsent(authority, a -> new SimulatedCounters());
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf); // FileSystem.get does so through ReflectionUtils; a direct caller may not
    String authority = name.getAuthority();
    if (authority == null) {
      throw new IOException("simfs needs a profile as authority: simfs://s3/path, got " + name);
    }
    this.uri = URI.create(SCHEME + "://" + authority);
    // <profile>[-nostate][.<anything>]: the part after the first dot only separates instances.
    int dot = authority.indexOf('.');
    String kind = dot < 0 ? authority : authority.substring(0, dot);
    this.discardState = kind.endsWith(NO_STATE_SUFFIX);
    String profile =
        discardState ? kind.substring(0, kind.length() - NO_STATE_SUFFIX.length()) : kind;
    if (profile.equals("local")) {
      profile = "none";
    }
    long seed = conf.getLong("fs.simfs.seed", 42) ^ profile.hashCode();
    this.model =
        new LatencyModel(
            profile,
            seed,
            conf.getDouble("fs.simfs.stallScale", 1.0),
            conf.getDouble("fs.simfs.latencyScale", 1.0),
            conf.getInt("fs.simfs.datanodes", DataNodeCluster.DEFAULT_DATANODES),
            conf.getInt("fs.simfs.replication", DataNodeCluster.DEFAULT_REPLICATION));
    this.shared = Shared.of(ProcessResources.shared());
    this.counters = shared.counters.computeIfAbsent(authority, a -> new SimulatedCounters());
    local.initialize(URI.create("file:///"), conf);
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  /**
   * The replication of the simulated cluster (3 on slow-datanode-periods, as its pipelines), as
   * HDFS reports {@code dfs.replication}: streamstate asks this many favoured DataNodes of a file
   * it places away from suspect ones. Hadoop's default would say 1, and the other two replicas of
   * such a file would then be placed at random, the slow DataNode among them half the time.
   */
  @Override
  public short getDefaultReplication() {
    DataNodeCluster cluster = model.cluster();
    return (short) (cluster == null ? 1 : cluster.replication());
  }

  @Override
  public short getDefaultReplication(Path path) {
    return getDefaultReplication();
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  public Path getWorkingDirectory() {
    return new Path(uri.toString() + "/");
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    throw new UnsupportedOperationException("simfs has a fixed working directory");
  }

  @Override
  public boolean hasPathCapability(Path path, String capability) throws IOException {
    if (CONDITIONAL_CREATE.equals(capability)) {
      return true;
    }
    // Like HDFS, create(overwrite=false) takes the name at once (CREATE_NEW) and the data follows
    // at close; an object store (the s3 profile) decides at completion instead.
    if (EXCLUSIVE_CREATE.equals(capability)) {
      return !model.profile().equals("s3");
    }
    // Like HDFS, an open stream's hsync makes what was written durable and visible to readers.
    if (APPEND_HSYNC.equals(capability)) {
      return !model.profile().equals("s3");
    }
    return super.hasPathCapability(path, capability);
  }

  private java.nio.file.Path toLocal(Path path) {
    Path qualified = makeQualified(path);
    return java.nio.file.Path.of(qualified.toUri().getPath());
  }

  private Path toSim(java.nio.file.Path p) {
    return new Path(SCHEME, uri.getAuthority(), p.toString());
  }

  private boolean discarded(java.nio.file.Path p) {
    return discardState && STREAMSTATE_FILES.matcher(p.toString()).find();
  }

  /** Where {@code p} is ({@link Area#of(String)}). */
  private static Area area(java.nio.file.Path p) {
    return Area.of(p.toString());
  }

  /** The area of a rename ({@link Area#of(String, String)}). */
  private static Area area(java.nio.file.Path source, java.nio.file.Path target) {
    return Area.of(source.toString(), target.toString());
  }

  /** The model this instance draws from; tests set its clock. */
  LatencyModel model() {
    return model;
  }

  /** A request the model held this long is logged to stderr with its thread. */
  private static final long STALL_LOG_MS = 3000;

  /** Counts one request of kind {@code op} on {@code area} and pays its latency. */
  private void delay(Op op, long bytes, Area area) throws IOException {
    delay(op, bytes, area, null, null);
  }

  /**
   * Counts one request of kind {@code op} on {@code area} and pays its latency; a data write or
   * sync through {@code pipeline} (null: none) first waits for its slow DataNodes.
   */
  private void delay(Op op, long bytes, Area area, int[] pipeline, String path) throws IOException {
    counters.count(op, area);
    try {
      LatencyModel.Delay d = model.delay(op, bytes, pipeline);
      counters.delayMs.add(d.sleptMs());
      counters.modelMs.add(d.modelMs());
      if (d.slowNodeWaitMs() > 0) {
        counters.slowNodeWaits.increment();
        counters.slowNodeWaitMs.add(d.slowNodeWaitMs());
        // Which write a slow DataNode held, for reading a run's tail (the child's stderr log).
        System.err.printf(
            "simfs %s: %s of %s through %s waited %d ms for a slow DataNode (thread %s)%n",
            uri.getAuthority(),
            op,
            path,
            DataNodeCluster.names(pipeline),
            (long) d.slowNodeWaitMs(),
            Thread.currentThread().getName());
      } else if (d.modelMs() >= STALL_LOG_MS) {
        // A stall of the per-write model (slow-datanode): which write, and whose thread it held.
        System.err.printf(
            "simfs %s: %s of %s stalled %d ms (thread %s)%n",
            uri.getAuthority(),
            op,
            path == null ? "(a metadata request)" : path,
            (long) d.modelMs(),
            Thread.currentThread().getName());
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new InterruptedIOException("interrupted in simulated " + op);
    }
  }

  // ---- create ----

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
    return create(f, overwrite, List.of());
  }

  /**
   * Creates {@code path}; on slow-datanode-periods its pipeline is the first {@code replication} of
   * {@code favoredNodes} that name DataNodes ({@code dn1} .. {@code dnN}), filled up at random.
   * Other profiles ignore {@code favoredNodes}.
   */
  @Override
  public FSDataOutputStream create(Path f, boolean overwrite, List<String> favoredNodes)
      throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (discarded(p)) {
      // Not durable, so no storage latency either, and not counted.
      return new FSDataOutputStream(OutputStream.nullOutputStream(), null);
    }
    Area area = area(p);
    delay(Op.CREATE, 0, area);
    if (!favoredNodes.isEmpty()) {
      counters.favoredCreates.increment();
      if (System.getenv("SIMFS_DEBUG_PLACEMENT") != null) {
        System.err.printf("simfs placement: %s favoured %s%n", p, favoredNodes);
      }
    }
    java.nio.file.Path parent = p.getParent();
    if (parent != null) {
      if (Files.isRegularFile(parent)) {
        throw new ParentNotDirectoryException(parent.toString());
      }
      Files.createDirectories(parent);
    }
    if (Files.isDirectory(p)) {
      throw new FileAlreadyExistsException(f + " is a directory");
    }
    OutputStream out;
    try {
      out =
          overwrite
              ? Files.newOutputStream(p)
              : Files.newOutputStream(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    } catch (java.nio.file.FileAlreadyExistsException e) {
      throw new FileAlreadyExistsException(f + " already exists");
    }
    DataNodeCluster cluster = model.cluster();
    int[] pipeline = cluster == null ? null : cluster.pickPipeline(favoredNodes);
    if (pipeline != null
        && !favoredNodes.isEmpty()
        && cluster.pipelineWaitMs(pipeline, model.nowMs()) > 0) {
      // Placed away from suspects, yet through a DataNode slow now: a placement that missed.
      counters.favoredCreatesOnSlow.increment();
    }
    DelayedCloseStream stream = new DelayedCloseStream(out, area, p.toString(), pipeline);
    shared.openStreams.put(p.toString(), stream);
    return new FSDataOutputStream(stream, null);
  }

  /**
   * The DataNodes {@code out} writes through ({@code dn1} .. {@code dnN}), first to last: its
   * pipeline, picked at create. Empty on profiles without DataNodes, and for a stream this file
   * system did not create.
   */
  @Override
  public List<String> pipelineOf(OutputStream out) {
    OutputStream s = out instanceof FSDataOutputStream fsOut ? fsOut.getWrappedStream() : out;
    if (s instanceof DelayedCloseStream stream
        && stream.owner() == this
        && stream.pipeline != null) {
      return DataNodeCluster.names(stream.pipeline);
    }
    return List.of();
  }

  /**
   * As HDFS's: the file's open stream (its writer's lease), if any, is ended: its later writes and
   * syncs fail. One NameNode request.
   */
  @Override
  public boolean recoverLease(Path f) throws IOException {
    java.nio.file.Path p = toLocal(f);
    delay(Op.STATUS, 0, area(p));
    if (!Files.exists(p)) {
      throw new FileNotFoundException(f.toString());
    }
    DelayedCloseStream open = shared.openStreams.remove(p.toString());
    if (open != null) {
      open.fence();
    }
    return true;
  }

  @Override
  public boolean isFileClosed(Path f) {
    return !shared.openStreams.containsKey(toLocal(f).toString());
  }

  @Override
  public FSDataOutputStream createNonRecursive(
      Path f,
      FsPermission permission,
      EnumSet<CreateFlag> flags,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    java.nio.file.Path parent = toLocal(f).getParent();
    if (parent != null && !Files.isDirectory(parent) && !discarded(toLocal(f))) {
      throw new FileNotFoundException("Parent directory of " + f + " does not exist");
    }
    return create(
        f,
        permission,
        flags.contains(CreateFlag.OVERWRITE),
        bufferSize,
        replication,
        blockSize,
        progress);
  }

  /** {@code createFile()}: accepts the conditional-create option (create is atomic anyway). */
  @Override
  public FSDataOutputStreamBuilder<FSDataOutputStream, ?> createFile(Path path) {
    return new Builder(this, path).create().overwrite(true);
  }

  private static final class Builder
      extends FSDataOutputStreamBuilder<FSDataOutputStream, Builder> {
    Builder(FileSystem fs, Path path) {
      super(fs, path);
    }

    @Override
    public Builder getThisBuilder() {
      return this;
    }

    @Override
    public FSDataOutputStream build() throws IOException {
      return getFS()
          .create(
              getPath(),
              getPermission(),
              getFlags().contains(CreateFlag.OVERWRITE),
              getBufferSize(),
              getReplication(),
              getBlockSize(),
              getProgress());
    }
  }

  /**
   * Counts bytes; the data write's latency (PUT, pipeline ack) is paid at close, or at each {@code
   * hsync} for what was written since the last one (and a block allocation, metadata, per {@link
   * #BLOCK_BYTES} past the first), as an HDFS stream kept open pays it. Data reach the local file
   * at once (no buffering), so readers see what was synced. On slow-datanode-periods the close's
   * data write and each sync wait for the slow DataNodes of the stream's pipeline; {@code write}
   * calls do not (HDFS's packet queue, 80 packets of 64 KiB, holds more than the bench's files
   * write between two syncs).
   */
  private final class DelayedCloseStream extends FilterOutputStream
      implements Syncable, StreamCapabilities {
    private final Area area;
    private final String localPath;

    /** DataNode indexes of this file's pipeline (slow-datanode-periods), else null. */
    final int[] pipeline;

    private volatile boolean fenced;
    private long bytes;
    private long syncedBytes;
    private long blocksAllocated;
    private boolean synced;
    private boolean closed;

    DelayedCloseStream(OutputStream out, Area area, String localPath, int[] pipeline) {
      super(out);
      this.area = area;
      this.localPath = localPath;
      this.pipeline = pipeline;
    }

    SimulatedFileSystem owner() {
      return SimulatedFileSystem.this;
    }

    void fence() {
      fenced = true;
    }

    private void checkLease() throws IOException {
      if (fenced) {
        throw new IOException(
            "simfs: the lease on " + localPath + " was recovered by another client");
      }
    }

    @Override
    public void write(int b) throws IOException {
      checkLease();
      out.write(b);
      bytes++;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      checkLease();
      out.write(b, off, len);
      bytes += len;
    }

    @Override
    public boolean hasCapability(String capability) {
      return !model.profile().equals("s3")
          && (StreamCapabilities.HSYNC.equals(capability)
              || StreamCapabilities.HFLUSH.equals(capability));
    }

    @Override
    public void hflush() throws IOException {
      hsync();
    }

    @Override
    public synchronized void hsync() throws IOException {
      if (closed) {
        throw new IOException("stream is closed");
      }
      checkLease();
      out.flush();
      // A file's first block is folded into its create, as for a file written and closed at once.
      long blocksNeeded = Math.max(1, (bytes + BLOCK_BYTES - 1) / BLOCK_BYTES);
      while (blocksAllocated < blocksNeeded) {
        if (blocksAllocated > 0) {
          delay(Op.ADD_BLOCK, 0, area);
        }
        blocksAllocated++;
      }
      long pending = bytes - syncedBytes;
      if (pending > 0 || !synced) {
        delay(Op.SYNC, pending, area, pipeline, localPath);
        counters.bytesWritten.add(pending);
      }
      syncedBytes = bytes;
      synced = true;
    }

    /**
     * Pays the data write of what was not synced; a file synced whole before close (what
     * streamstate's storage does) pays nothing more, so that it costs what a file written and
     * closed at once does: its create and one data write.
     */
    @Override
    public synchronized void close() throws IOException {
      if (closed) {
        return;
      }
      closed = true;
      shared.openStreams.remove(localPath, this);
      super.close();
      checkLease();
      long pending = bytes - syncedBytes;
      if (pending > 0 || !synced) {
        delay(Op.WRITE, pending, area, pipeline, localPath);
        counters.bytesWritten.add(pending);
      }
      counters.countFile(area);
    }
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) {
    throw new UnsupportedOperationException("simfs does not append");
  }

  // ---- read ----

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    java.nio.file.Path p = toLocal(f);
    long size;
    try {
      size = Files.size(p);
    } catch (NoSuchFileException e) {
      delay(Op.OPEN, 0, area(p));
      throw new FileNotFoundException(f.toString());
    }
    Area area = area(p);
    delay(Op.OPEN, 0, area); // the request; its bytes are charged as they are read
    return new FSDataInputStream(
        new MeteredInput(local.open(new Path("file", null, p.toString()), bufferSize), size));
  }

  /**
   * A file opened for reading: each byte read pays the profile's transfer time ({@link
   * LatencyModel#readTransferMs}) and counts in {@code bytesRead}; a seek or a skip moves nothing
   * and costs nothing (HDFS opens a block reader at the new offset; S3A a ranged GET). Transfer
   * time is slept in steps of at least a millisecond, the rest at close.
   */
  private final class MeteredInput extends org.apache.hadoop.fs.FSInputStream {
    private final FSDataInputStream in;
    private final long length;
    private double owedMs; // transfer time read but not slept yet

    MeteredInput(FSDataInputStream in, long length) {
      this.in = in;
      this.length = length;
    }

    @Override
    public int read() throws IOException {
      int b = in.read();
      if (b >= 0) {
        charge(1);
      }
      return b;
    }

    @Override
    public int read(byte[] b, int off, int len) throws IOException {
      int n = in.read(b, off, len);
      if (n > 0) {
        charge(n);
      }
      return n;
    }

    @Override
    public int read(long position, byte[] b, int off, int len) throws IOException {
      int n = in.read(position, b, off, len);
      if (n > 0) {
        charge(n);
      }
      return n;
    }

    @Override
    public long skip(long n) throws IOException {
      if (n <= 0) {
        return 0;
      }
      long from = in.getPos();
      long to = Math.min(length, from + n);
      in.seek(to);
      return to - from;
    }

    @Override
    public void seek(long pos) throws IOException {
      in.seek(pos);
    }

    @Override
    public long getPos() throws IOException {
      return in.getPos();
    }

    @Override
    public boolean seekToNewSource(long targetPos) {
      return false;
    }

    @Override
    public int available() throws IOException {
      return in.available();
    }

    @Override
    public void close() throws IOException {
      try {
        pay(owedMs);
      } finally {
        in.close();
      }
    }

    private void charge(int bytes) throws IOException {
      counters.bytesRead.add(bytes);
      double ms = model.readTransferMs(bytes);
      counters.modelMs.add(ms);
      owedMs += ms;
      if (owedMs >= 1) {
        pay(owedMs);
      }
    }

    private void pay(double ms) throws IOException {
      owedMs = 0;
      if (ms <= 0) {
        return;
      }
      try {
        counters.delayMs.add(model.sleepScaled(ms));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new InterruptedIOException("interrupted in a simulated read");
      }
    }
  }

  // ---- metadata ----

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    java.nio.file.Path s = toLocal(src);
    java.nio.file.Path d = toLocal(dst);
    long size = Files.isRegularFile(s) ? Files.size(s) : 0;
    delay(Op.RENAME, size, area(s, d));
    if (!Files.exists(s)) {
      return false;
    }
    if (Files.isDirectory(d)) {
      d = d.resolve(s.getFileName());
    }
    if (Files.exists(d) || d.getParent() == null || !Files.isDirectory(d.getParent())) {
      return false;
    }
    try {
      Files.move(s, d);
      return true;
    } catch (java.nio.file.FileAlreadyExistsException | NoSuchFileException e) {
      return false;
    }
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    java.nio.file.Path p = toLocal(f);
    delay(Op.DELETE, 0, area(p));
    if (!Files.exists(p)) {
      return false;
    }
    if (Files.isDirectory(p) && recursive) {
      try (Stream<java.nio.file.Path> walk = Files.walk(p)) {
        for (java.nio.file.Path q : walk.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(q);
        }
      }
      return true;
    }
    try {
      return Files.deleteIfExists(p);
    } catch (DirectoryNotEmptyException e) {
      throw new IOException("Directory " + f + " is not empty", e);
    }
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (discarded(p) && !Files.exists(p)) {
      return new FileStatus[0];
    }
    delay(Op.LIST, 0, area(p));
    if (!Files.exists(p)) {
      throw new FileNotFoundException(f.toString());
    }
    if (!Files.isDirectory(p)) {
      return new FileStatus[] {status(p)};
    }
    List<FileStatus> result = new ArrayList<>();
    try (Stream<java.nio.file.Path> children = Files.list(p)) {
      for (java.nio.file.Path c : children.toList()) {
        try {
          result.add(status(c));
        } catch (FileNotFoundException e) {
          // removed while listing
        }
      }
    }
    return result.toArray(new FileStatus[0]);
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (discarded(p)) {
      return true;
    }
    delay(Op.MKDIRS, 0, area(p));
    if (Files.isRegularFile(p)) {
      throw new FileAlreadyExistsException(f + " is a file");
    }
    Files.createDirectories(p);
    return true;
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (discarded(p) && !Files.exists(p)) {
      // The baseline's state directories "exist" (empty).
      return new FileStatus(
          0, true, 1, 0, 0, 0, FsPermission.getDirDefault(), "bench", "bench", toSim(p));
    }
    delay(Op.STATUS, 0, area(p));
    return status(p);
  }

  private FileStatus status(java.nio.file.Path p) throws IOException {
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(p, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new FileNotFoundException(p.toString());
    }
    boolean dir = a.isDirectory();
    return new FileStatus(
        dir ? 0 : a.size(),
        dir,
        1,
        64L << 20,
        a.lastModifiedTime().toMillis(),
        a.lastAccessTime().toMillis(),
        dir ? FsPermission.getDirDefault() : FsPermission.getFileDefault(),
        "bench",
        "bench",
        toSim(p));
  }
}
