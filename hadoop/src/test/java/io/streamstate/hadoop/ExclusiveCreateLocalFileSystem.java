package io.streamstate.hadoop;

import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.net.URI;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.CreateFlag;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.ParentNotDirectoryException;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A Hadoop file system over the local disk, under a scheme of its own ({@code <scheme>:///abs/path}
 * is the local {@code /abs/path}), whose {@code create(path, overwrite=false)} is atomic ({@code
 * java.nio} {@code CREATE_NEW}) and which says so with the path capability {@value
 * CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY}. Not a {@link RawLocalFileSystem}, so that {@link
 * HadoopStorage} and the Spark adapter go through its Hadoop calls (as they would on HDFS), not
 * around them. Register it with {@code fs.<scheme>.impl}; the scheme is taken from the URI it is
 * initialised with. Subclasses (fault injection) override the Hadoop calls.
 *
 * <p>A subclass that sets {@link #declaresExclusiveCreate} to false plays a store without
 * create-if-absent.
 *
 * <p>Its output streams declare {@code hsync} (a {@code FileChannel.force}), and the file system
 * declares {@value CreateIfAbsent#APPEND_HSYNC_CAPABILITY}, as HDFS would: {@link HadoopStorage}
 * appends its segment journals here through Hadoop's stream API.
 */
public class ExclusiveCreateLocalFileSystem extends FileSystem
    implements org.apache.hadoop.fs.LeaseRecoverable {
  /** Streams still open, by local path, as HDFS leases: {@link #recoverLease} fences them. */
  private static final java.util.Map<String, SyncableStream> OPEN_STREAMS =
      new java.util.concurrent.ConcurrentHashMap<>();

  private URI uri = URI.create("exclfs:///");
  private final RawLocalFileSystem local = new RawLocalFileSystem();

  /** Whether {@link #hasPathCapability} declares the exclusive-create capability. */
  protected boolean declaresExclusiveCreate = true;

  /** Whether {@link #hasPathCapability} declares that open streams can be appended and synced. */
  protected boolean declaresAppendHsync = true;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    this.uri = URI.create(name.getScheme() + ":///");
    local.initialize(URI.create("file:///"), conf);
  }

  @Override
  public String getScheme() {
    return uri.getScheme();
  }

  @Override
  public URI getUri() {
    return uri;
  }

  @Override
  public Path getWorkingDirectory() {
    return new Path(uri.toString());
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    throw new UnsupportedOperationException(getScheme() + " has a fixed working directory");
  }

  @Override
  public boolean hasPathCapability(Path path, String capability) throws IOException {
    if (CreateIfAbsent.EXCLUSIVE_CREATE_CAPABILITY.equals(capability)) {
      return declaresExclusiveCreate;
    }
    if (CreateIfAbsent.APPEND_HSYNC_CAPABILITY.equals(capability)) {
      return declaresAppendHsync;
    }
    return super.hasPathCapability(path, capability);
  }

  /** The local file behind {@code path}. */
  public java.nio.file.Path toLocal(Path path) {
    return java.nio.file.Path.of(makeQualified(path).toUri().getPath());
  }

  private Path toOwn(java.nio.file.Path p) {
    return new Path(uri.getScheme(), null, p.toString());
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
    java.nio.file.Path p = toLocal(f);
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
    FileChannel channel;
    try {
      channel =
          overwrite
              ? FileChannel.open(
                  p,
                  StandardOpenOption.CREATE,
                  StandardOpenOption.TRUNCATE_EXISTING,
                  StandardOpenOption.WRITE)
              : FileChannel.open(p, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    } catch (java.nio.file.FileAlreadyExistsException e) {
      throw new FileAlreadyExistsException(f + " already exists");
    }
    SyncableStream stream = new SyncableStream(channel, p.toString());
    OPEN_STREAMS.put(p.toString(), stream);
    return new FSDataOutputStream(stream, statistics);
  }

  /** As HDFS's: the file's open stream, if any, is ended; its later writes and syncs fail. */
  @Override
  public boolean recoverLease(Path f) throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (!Files.exists(p)) {
      throw new FileNotFoundException(f.toString());
    }
    SyncableStream open = OPEN_STREAMS.remove(p.toString());
    if (open != null) {
      open.fenced = true;
    }
    return true;
  }

  @Override
  public boolean isFileClosed(Path f) {
    return !OPEN_STREAMS.containsKey(toLocal(f).toString());
  }

  /** Writes straight to the file (readers see every write); {@code hsync} forces it to disk. */
  private static final class SyncableStream extends FilterOutputStream
      implements Syncable, StreamCapabilities {
    private final FileChannel channel;
    private final String localPath;
    volatile boolean fenced;

    SyncableStream(FileChannel channel, String localPath) {
      super(Channels.newOutputStream(channel));
      this.channel = channel;
      this.localPath = localPath;
    }

    private void checkLease() throws IOException {
      if (fenced) {
        throw new IOException("The lease on " + localPath + " was recovered by another writer");
      }
    }

    @Override
    public void write(int b) throws IOException {
      checkLease();
      out.write(b);
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      checkLease();
      out.write(b, off, len); // FilterOutputStream would write byte by byte
    }

    @Override
    public void hflush() throws IOException {
      checkLease();
      out.flush();
    }

    @Override
    public void hsync() throws IOException {
      checkLease();
      out.flush();
      channel.force(false);
    }

    @Override
    public void close() throws IOException {
      OPEN_STREAMS.remove(localPath, this);
      super.close();
    }

    @Override
    public boolean hasCapability(String capability) {
      return StreamCapabilities.HSYNC.equals(capability)
          || StreamCapabilities.HFLUSH.equals(capability);
    }
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
    if (parent != null && !Files.isDirectory(parent)) {
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

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress)
      throws IOException {
    throw new UnsupportedOperationException(getScheme() + " does not append");
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    java.nio.file.Path p = toLocal(f);
    if (!Files.isRegularFile(p)) {
      throw new FileNotFoundException(f.toString());
    }
    return local.open(new Path("file", null, p.toString()), bufferSize);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    java.nio.file.Path s = toLocal(src);
    java.nio.file.Path d = toLocal(dst);
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
    if (Files.isRegularFile(p)) {
      throw new FileAlreadyExistsException(f + " is a file");
    }
    Files.createDirectories(p);
    return true;
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    return status(toLocal(f));
  }

  private FileStatus status(java.nio.file.Path p) throws IOException {
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(p, BasicFileAttributes.class);
    } catch (NoSuchFileException | java.nio.file.NotDirectoryException e) {
      throw new FileNotFoundException(p.toString());
    } catch (java.nio.file.FileSystemException e) {
      if (String.valueOf(e.getReason()).contains("Not a directory")) {
        throw new FileNotFoundException(p.toString()); // a parent is a file
      }
      throw e;
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
        "streamstate",
        "streamstate",
        toOwn(p));
  }
}
