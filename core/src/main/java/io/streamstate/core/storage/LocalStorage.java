package io.streamstate.core.storage;

import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.stream.Stream;

/**
 * {@link Storage} on a local file system through {@code java.nio}: no Hadoop, no child processes.
 *
 * <p>{@link #create} opens the final name with {@code CREATE_NEW} (the kernel's {@code O_EXCL},
 * atomic create-if-absent), writes, forces the file to disk, then forces its directory so that the
 * new name itself survives a crash. A failed write deletes what it created (it owns the name), so
 * the only partial files a reader can ever meet are those of a writer that is still writing or that
 * died mid-write. {@link #openNew} is that create as a stream ({@link SupportsStreamingCreate}),
 * and {@link #create} is built on it.
 *
 * <p>{@link #createAppendable} creates the same way and syncs each append with {@code fdatasync}
 * ({@code FileChannel.force(false)}), which covers the data and the file's length.
 */
public final class LocalStorage implements Storage, SupportsAppend, SupportsStreamingCreate {
  private final Path root;

  public LocalStorage(Path root) {
    this.root = Objects.requireNonNull(root, "root").toAbsolutePath().normalize();
  }

  /** The directory under which all names are resolved. */
  public Path root() {
    return root;
  }

  @Override
  public void create(String name, ContentWriter content) {
    PendingFile file = openNew(name, false);
    // From here on the name is ours: on any failure remove it, so nothing partial is left.
    try {
      content.writeTo(file.stream());
    } catch (IOException | RuntimeException e) {
      withdrawAfter(file, e);
      if (e instanceof RuntimeException re && !(e instanceof UncheckedIOException)) {
        throw re;
      }
      throw new RetryableException("Cannot write " + resolve(name) + ": " + e, e);
    }
    try {
      file.publish();
    } catch (RetryableException e) {
      withdrawAfter(file, e);
      throw e;
    }
  }

  /** Withdraws {@code file} after {@code cause}; a failed withdrawal carries the cause. */
  static void withdrawAfter(PendingFile file, Exception cause) {
    try {
      file.withdraw();
    } catch (OutcomeUnknownException e) {
      e.addSuppressed(cause);
      throw e;
    }
  }

  /**
   * {@inheritDoc}
   *
   * <p>{@code CREATE_NEW} at the final name (with {@code overwrite}, after deleting what is there
   * and its Hadoop checksum side file, retried if another writer recreates the name in between).
   * {@link PendingFile#publish()} forces the file, then its directory, to disk.
   */
  @Override
  public PendingFile openNew(String name, boolean overwrite) {
    Path path = resolve(name);
    FileChannel channel = null;
    for (int attempt = 0; channel == null; attempt++) {
      if (overwrite) {
        deleteForOverwrite(path);
      }
      try {
        channel = createNew(name, path);
      } catch (FileAlreadyExistsException e) {
        if (!overwrite || attempt >= OVERWRITE_ATTEMPTS) {
          throw e;
        }
        // Another writer recreated it between our delete and create: delete again.
      }
    }
    return new LocalPendingFile(name, path, channel, fileKeyOf(path));
  }

  /**
   * The identity of the file at {@code path} (device and inode), which tells it from a file another
   * writer later put at the same name; null if the file is gone or the platform gives none.
   */
  private static Object fileKeyOf(Path path) {
    try {
      return Files.readAttributes(path, BasicFileAttributes.class).fileKey();
    } catch (IOException e) {
      return null;
    }
  }

  /** How often an overwrite deletes and creates again while other writers recreate the name. */
  private static final int OVERWRITE_ATTEMPTS = 10;

  private static void deleteForOverwrite(Path path) {
    try {
      Files.deleteIfExists(path);
      // A file Hadoop's checksummed local file system wrote has a side file that would go stale.
      Files.deleteIfExists(path.resolveSibling("." + path.getFileName() + ".crc"));
    } catch (IOException e) {
      throw new RetryableException("Cannot replace " + path + ": " + e, e);
    }
  }

  /** A file created with {@code CREATE_NEW}, written through a buffer, forced at publish. */
  private static final class LocalPendingFile implements PendingFile {
    private final String name;
    private final Path path;
    private final FileChannel channel;
    private final OutputStream stream;

    /** This file's identity at its create (null: unknown), checked before withdraw deletes. */
    private final Object fileKey;

    LocalPendingFile(String name, Path path, FileChannel channel, Object fileKey) {
      this.name = name;
      this.path = path;
      this.channel = channel;
      this.fileKey = fileKey;
      this.stream =
          new BufferedOutputStream(Channels.newOutputStream(channel), 64 << 10) {
            @Override
            public void close() throws IOException {
              flush(); // publishing is publish()'s step
            }
          };
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
      try (channel) {
        stream.flush();
        channel.force(true);
      } catch (IOException e) {
        throw new RetryableException("Cannot write " + path + ": " + e, e);
      }
      forceDirectory(path.getParent());
    }

    @Override
    public void withdraw() {
      try {
        channel.close();
      } catch (IOException e) {
        // Closing only releases the descriptor here; the file is deleted below either way.
      }
      if (fileKey != null && !fileKey.equals(fileKeyOf(path))) {
        // Gone, or another writer's file took the name since (an overwrite of it by another
        // attempt, a torn entry set aside and written again): not ours to delete.
        return;
      }
      try {
        Files.deleteIfExists(path);
      } catch (IOException e) {
        throw new OutcomeUnknownException(
            "Cannot remove the partial file " + path + " of a failed write: " + e, e);
      }
    }
  }

  /** Opens {@code path} with {@code CREATE_NEW} (O_EXCL), making its directory first. */
  private static FileChannel createNew(String name, Path path) {
    try {
      Files.createDirectories(path.getParent());
    } catch (IOException e) {
      throw new RetryableException("Cannot create directory for " + path + ": " + e, e);
    }
    try {
      return FileChannel.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
    } catch (java.nio.file.FileAlreadyExistsException e) { // the JDK's: ours has its name
      throw new FileAlreadyExistsException(name);
    } catch (IOException e) {
      throw new RetryableException("Cannot create " + path + ": " + e, e);
    }
  }

  @Override
  public boolean appendSupported() {
    return true;
  }

  @Override
  public AppendableFile createAppendable(String name) {
    Path path = resolve(name);
    FileChannel channel = createNew(name, path);
    try {
      forceDirectory(path.getParent());
    } catch (RuntimeException e) {
      try {
        channel.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw e;
    }
    try {
      // Held while the file is open for appends: fence() tells a live writer by it.
      channel.tryLock();
    } catch (IOException | OverlappingFileLockException e) {
      try {
        channel.close();
      } catch (IOException suppressed) {
        e.addSuppressed(suppressed);
      }
      throw new RetryableException("Cannot lock " + path + " for appends: " + e, e);
    }
    return new LocalAppendableFile(name, path, channel);
  }

  @Override
  public void fence(String name) {
    Path path = resolve(name);
    try (FileChannel channel = FileChannel.open(path, StandardOpenOption.WRITE)) {
      FileLock lock;
      try {
        lock = channel.tryLock();
      } catch (OverlappingFileLockException e) {
        lock = null; // held in this JVM
      }
      if (lock == null) {
        throw new ConflictException(
            path
                + " is held by a live writer (it holds the file's lock): another process is"
                + " still appending to it");
      }
      lock.release();
    } catch (NoSuchFileException e) {
      // nothing to fence
    } catch (IOException e) {
      throw new RetryableException("Cannot fence " + path + ": " + e, e);
    }
  }

  /** An appendable file on local disk: each append is written and forced before it returns. */
  private static final class LocalAppendableFile extends StreamAppendableFile {
    private final FileChannel channel;

    LocalAppendableFile(String name, Path path, FileChannel channel) {
      super(name, path.toString());
      this.channel = channel;
    }

    @Override
    protected void writeAndSync(byte[] bytes) throws IOException {
      ByteBuffer buffer = ByteBuffer.wrap(bytes);
      while (buffer.hasRemaining()) {
        channel.write(buffer);
      }
      channel.force(false);
    }

    @Override
    protected void closeStream() throws IOException {
      channel.close(); // also drops the lock
    }
  }

  private static void forceDirectory(Path dir) {
    // Linux makes a new directory entry durable only when the directory itself is synced.
    try (FileChannel d = FileChannel.open(dir, StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      throw new OutcomeUnknownException(
          "Wrote " + dir + " entry but could not sync the directory: " + e, e);
    }
  }

  @Override
  public InputStream open(String name) {
    Path path = resolve(name);
    try {
      return Files.newInputStream(path);
    } catch (NoSuchFileException e) {
      throw new MissingFileException("File not found: " + path);
    } catch (IOException e) {
      throw new RetryableException("Cannot open " + path + ": " + e, e);
    }
  }

  @Override
  public boolean delete(String name) {
    Path path = resolve(name);
    try {
      return Files.deleteIfExists(path);
    } catch (IOException e) {
      throw new RetryableException("Cannot delete " + path + ": " + e, e);
    }
  }

  @Override
  public List<FileInfo> list(String prefix) {
    // Walk only the deepest directory the prefix names completely.
    int slash = prefix.lastIndexOf('/');
    String dirPart = slash < 0 ? "" : prefix.substring(0, slash);
    Path dir = dirPart.isEmpty() ? root : resolve(dirPart);
    if (!Files.isDirectory(dir)) {
      return List.of();
    }
    List<FileInfo> result = new ArrayList<>();
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.forEach(
          p -> {
            String name = root.relativize(p).toString().replace('\\', '/');
            if (!name.startsWith(prefix)) {
              return;
            }
            try {
              BasicFileAttributes attrs = Files.readAttributes(p, BasicFileAttributes.class);
              if (attrs.isRegularFile()) {
                result.add(new FileInfo(name, attrs.size(), attrs.lastModifiedTime().toMillis()));
              }
            } catch (NoSuchFileException e) {
              // deleted while listing: not listed
            } catch (IOException e) {
              throw new RetryableException("Cannot list " + p + ": " + e, e);
            }
          });
    } catch (IOException e) {
      throw new RetryableException("Cannot list " + dir + ": " + e, e);
    } catch (UncheckedIOException e) {
      if (e.getCause() instanceof NoSuchFileException) {
        return List.of(); // directory removed while listing
      }
      throw new RetryableException("Cannot list " + dir + ": " + e.getCause(), e);
    }
    result.sort(Comparator.comparing(FileInfo::name));
    return result;
  }

  @Override
  public String describe() {
    return root.toUri().toString();
  }

  private Path resolve(String name) {
    if (name.isEmpty() || name.startsWith("/") || name.contains("..") || name.contains("\\")) {
      throw new IllegalArgumentException("Invalid storage name: '" + name + "'");
    }
    return root.resolve(name);
  }

  @Override
  public String toString() {
    return "LocalStorage[" + root + "]";
  }
}
