package io.streamstate.spark.shared;

import java.io.BufferedOutputStream;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.net.URI;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Comparator;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * The local spill files of {@code io.streamstate.spark.HedgedFileCommitProtocol}, as the Hadoop
 * {@link FileSystem} that Spark's output writers write them through: {@code
 * streamstate-spill:/abs/path} is the local file {@code /abs/path}, written with {@code java.nio}.
 *
 * <p>Why not Hadoop's {@code file:}: its {@code LocalFileSystem} writes a {@code .crc} file next to
 * every file, and without Hadoop's native library forks a {@code chmod} process per file created. A
 * spill file lives for one task and is read once, by the commit that publishes it.
 *
 * <p>It implements what Spark's file formats call while they write (measured for Parquet, ORC,
 * JSON, CSV and text): {@code create}, {@code getFileStatus} (Spark's write statistics), the
 * default block size and replication, {@code mkdirs} and {@code delete}. Everything else ({@code
 * open}, {@code append}, {@code rename}, {@code listStatus}) throws {@link
 * UnsupportedOperationException} naming the call. Created files are not forced to disk: a spill
 * file that a crash loses belongs to a task that is run again anyway.
 *
 * <p>{@link #register} makes the scheme known to a task's configuration and puts an instance into
 * Hadoop's file system cache, where readers holding another configuration (Spark's write statistics
 * tracker) find it. Instances hold no state but the configuration.
 *
 * <p>It maps Hadoop's {@code Path} and {@code FileAlreadyExistsException} to {@code java.nio}'s
 * types of the same names, so it names the latter fully qualified.
 */
public final class SinkSpillFileSystem extends FileSystem {
  /** The scheme of spill paths. */
  public static final String SCHEME = "streamstate-spill";

  private static final URI ROOT = URI.create(SCHEME + ":///");
  private static final int BUFFER_BYTES = 64 * 1024;

  private Path workingDirectory = new Path(ROOT);

  /** For Hadoop's reflection ({@code fs.streamstate-spill.impl}). */
  public SinkSpillFileSystem() {}

  /**
   * Makes {@code streamstate-spill:} paths resolvable through {@code conf} (the task's
   * configuration, which Spark hands to the output writer), and through Hadoop's file system cache
   * for the calling thread's user whatever the configuration.
   */
  public static void register(Configuration conf) throws IOException {
    conf.set("fs." + SCHEME + ".impl", SinkSpillFileSystem.class.getName());
    FileSystem.get(ROOT, conf);
  }

  /** The spill path of the local file {@code local}. */
  public static Path pathOf(java.nio.file.Path local) {
    return new Path(SCHEME, null, local.toAbsolutePath().toString());
  }

  /** The local file behind a spill path. */
  public static java.nio.file.Path localOf(Path path) {
    URI uri = path.toUri();
    if (uri.getScheme() != null && !SCHEME.equalsIgnoreCase(uri.getScheme())) {
      throw new IllegalArgumentException("Not a " + SCHEME + " path: " + path);
    }
    if (!path.isUriPathAbsolute()) {
      throw new IllegalArgumentException("Not an absolute " + SCHEME + " path: " + path);
    }
    return java.nio.file.Path.of(uri.getPath());
  }

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
  }

  @Override
  public String getScheme() {
    return SCHEME;
  }

  @Override
  public URI getUri() {
    return ROOT;
  }

  @Override
  public Path getWorkingDirectory() {
    return workingDirectory;
  }

  @Override
  public void setWorkingDirectory(Path dir) {
    workingDirectory = makeQualified(dir);
  }

  private java.nio.file.Path local(Path f) {
    return localOf(makeQualified(f));
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
    var p = local(f);
    if (p.getParent() != null) {
      Files.createDirectories(p.getParent());
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
    return new FSDataOutputStream(
        new BufferedOutputStream(Channels.newOutputStream(channel), BUFFER_BYTES), statistics);
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    var p = local(f);
    BasicFileAttributes a;
    try {
      a = Files.readAttributes(p, BasicFileAttributes.class);
    } catch (NoSuchFileException e) {
      throw new FileNotFoundException(f.toString());
    }
    return new FileStatus(
        a.isDirectory() ? 0 : a.size(),
        a.isDirectory(),
        1,
        getDefaultBlockSize(f),
        a.lastModifiedTime().toMillis(),
        pathOf(p));
  }

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    Files.createDirectories(local(f));
    return true;
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    var p = local(f);
    if (!Files.exists(p)) {
      return false;
    }
    if (recursive && Files.isDirectory(p)) {
      try (Stream<java.nio.file.Path> walk = Files.walk(p)) {
        for (var q : walk.sorted(Comparator.reverseOrder()).toList()) {
          Files.deleteIfExists(q);
        }
      }
      return true;
    }
    try {
      return Files.deleteIfExists(p);
    } catch (DirectoryNotEmptyException e) {
      throw new IOException("Cannot delete " + f + ": the directory is not empty", e);
    }
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) {
    throw unsupported("open", f);
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) {
    throw unsupported("append", f);
  }

  @Override
  public boolean rename(Path src, Path dst) {
    throw unsupported("rename", src);
  }

  @Override
  public FileStatus[] listStatus(Path f) {
    throw unsupported("listStatus", f);
  }

  private static UnsupportedOperationException unsupported(String call, Path f) {
    return new UnsupportedOperationException(
        SCHEME
            + " holds the local spill files of io.streamstate.spark.HedgedFileCommitProtocol,"
            + " which output writers only create; it does not "
            + call
            + " ("
            + f
            + ")");
  }
}
