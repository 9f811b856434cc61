package io.streamstate.testkit;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.StreamStateException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsBulkDelete;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A {@link Storage} that keeps its files in a map of this instance, for tests. It is at least as
 * strict as the contract: create-if-absent is decided atomically at publish time, and a file is
 * visible only once complete (as on an object store), so it never shows a partial file.
 *
 * <p>{@link #createAppendable} files grow by whole appends: each append replaces the file with a
 * longer copy in one step, so a reader sees every completed append and never part of one.
 *
 * <p>{@link #create} buffers what the {@link ContentWriter} writes and publishes it with one {@code
 * putIfAbsent}; if the writer throws, nothing is published. Each instance has its own files: no
 * static state, so tests may run in parallel.
 *
 * <p>The test helpers {@link #bytes}, {@link #names} and {@link #overwriteForTest} read and damage
 * files behind the contract's back (to simulate corruption that no well-behaved writer causes).
 */
public final class InMemoryStorage implements Storage, SupportsBulkDelete, SupportsAppend {

  private record StoredFile(byte[] bytes, long lastModifiedMillis) {}

  private final Map<String, StoredFile> files = new ConcurrentHashMap<>();
  private final LongSupplier clockMillis;

  /** An empty storage whose files are stamped with {@link System#currentTimeMillis()}. */
  public InMemoryStorage() {
    this(System::currentTimeMillis);
  }

  /**
   * An empty storage whose files are stamped (in {@link FileInfo#lastModifiedMillis()}) with the
   * time {@code clockMillis} gives when they are published, so that retention tests control time.
   */
  public InMemoryStorage(LongSupplier clockMillis) {
    this.clockMillis = Objects.requireNonNull(clockMillis, "clockMillis");
  }

  /**
   * {@inheritDoc}
   *
   * <p>An {@link IOException} or unchecked exception from {@code content} is rethrown as a {@link
   * RetryableException} (a {@link StreamStateException} is rethrown as it is); nothing is published
   * either way.
   */
  @Override
  public void create(String name, ContentWriter content) {
    requireValidName(name);
    Objects.requireNonNull(content, "content");
    // Fail fast like O_EXCL does, without running the writer; putIfAbsent below is what decides.
    if (files.containsKey(name)) {
      throw new FileAlreadyExistsException(name);
    }
    ByteArrayOutputStream buffer = new ByteArrayOutputStream();
    try {
      content.writeTo(buffer);
    } catch (StreamStateException e) {
      throw e;
    } catch (IOException | RuntimeException e) {
      throw new RetryableException(
          "Cannot write " + describe() + "/" + name + ": " + e + " (nothing was published)", e);
    }
    StoredFile file = new StoredFile(buffer.toByteArray(), clockMillis.getAsLong());
    if (files.putIfAbsent(name, file) != null) {
      throw new FileAlreadyExistsException(name);
    }
  }

  @Override
  public boolean appendSupported() {
    return true;
  }

  /** The appendable files still open, by name, for {@link #fence}. */
  private final Map<String, Set<MemoryAppendable>> openAppendables = new ConcurrentHashMap<>();

  /**
   * Fences every open appendable of {@code name}: their later appends fail with {@link
   * RetryableException} (as a writer whose lease was recovered), and the file no longer changes.
   */
  @Override
  public void fence(String name) {
    requireValidName(name);
    Set<MemoryAppendable> open = openAppendables.remove(name);
    if (open != null) {
      open.forEach(MemoryAppendable::fence);
    }
  }

  @Override
  public AppendableFile createAppendable(String name) {
    requireValidName(name);
    if (files.putIfAbsent(name, new StoredFile(new byte[0], clockMillis.getAsLong())) != null) {
      throw new FileAlreadyExistsException(name);
    }
    MemoryAppendable file = new MemoryAppendable(name);
    openAppendables.computeIfAbsent(name, n -> ConcurrentHashMap.newKeySet()).add(file);
    return file;
  }

  private final class MemoryAppendable implements AppendableFile {
    private final String name;
    private volatile long length; // written under the monitor, read without it
    private volatile boolean open = true;
    private boolean fenced; // guarded by this

    MemoryAppendable(String name) {
      this.name = name;
    }

    synchronized void fence() {
      fenced = true;
      open = false;
    }

    @Override
    public String name() {
      return name;
    }

    @Override
    public synchronized long append(byte[] bytes) {
      if (fenced) {
        throw new RetryableException(
            "Cannot append to " + describe() + "/" + name + ": another writer fenced it");
      }
      if (!open) {
        throw new IllegalStateException(describe() + "/" + name + " is closed for appends");
      }
      StoredFile grown =
          files.computeIfPresent(
              name,
              (n, old) -> {
                byte[] b = Arrays.copyOf(old.bytes(), old.bytes().length + bytes.length);
                System.arraycopy(bytes, 0, b, old.bytes().length, bytes.length);
                return new StoredFile(b, clockMillis.getAsLong());
              });
      if (grown == null) {
        open = false;
        throw new OutcomeUnknownException(
            "Cannot append to " + describe() + "/" + name + ": it was deleted");
      }
      long offset = length;
      length += bytes.length;
      return offset;
    }

    @Override
    public long length() {
      return length;
    }

    @Override
    public boolean isOpen() {
      return open;
    }

    @Override
    public void close() {
      open = false;
      Set<MemoryAppendable> open = openAppendables.get(name);
      if (open != null) {
        open.remove(this);
      }
    }
  }

  @Override
  public InputStream open(String name) {
    return new ByteArrayInputStream(find(name).bytes());
  }

  @Override
  public boolean delete(String name) {
    requireValidName(name);
    return files.remove(name) != null;
  }

  @Override
  public void deleteAll(Collection<String> names) {
    names.forEach(InMemoryStorage::requireValidName);
    names.forEach(files::remove);
  }

  @Override
  public List<FileInfo> list(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    return files.entrySet().stream()
        .filter(e -> e.getKey().startsWith(prefix))
        .map(e -> info(e.getKey(), e.getValue()))
        .sorted(Comparator.comparing(FileInfo::name))
        .toList();
  }

  @Override
  public String describe() {
    return "memory://" + Integer.toHexString(System.identityHashCode(this));
  }

  /**
   * Test helper: a copy of the content of {@code name}.
   *
   * @throws MissingFileException the file does not exist
   */
  public byte[] bytes(String name) {
    return find(name).bytes().clone();
  }

  /** Test helper: the names of all files, sorted; a snapshot, not a live view. */
  public Set<String> names() {
    return Collections.unmodifiableSet(new TreeSet<>(files.keySet()));
  }

  /**
   * Test helper: replaces (or creates) {@code name} with {@code bytes}, ignoring create-if-absent,
   * to simulate corruption or a file left by another writer.
   */
  public void overwriteForTest(String name, byte[] bytes) {
    requireValidName(name);
    files.put(name, new StoredFile(bytes.clone(), clockMillis.getAsLong()));
  }

  @Override
  public String toString() {
    return "InMemoryStorage[" + describe() + ", " + files.size() + " files]";
  }

  private static FileInfo info(String name, StoredFile file) {
    return new FileInfo(name, file.bytes().length, file.lastModifiedMillis());
  }

  private StoredFile find(String name) {
    requireValidName(name);
    StoredFile file = files.get(name);
    if (file == null) {
      throw new MissingFileException("File not found: " + describe() + "/" + name);
    }
    return file;
  }

  /** The same rule as {@code LocalStorage}, so a name valid here is valid on disk. */
  private static void requireValidName(String name) {
    Objects.requireNonNull(name, "name");
    if (name.isEmpty() || name.startsWith("/") || name.contains("..") || name.contains("\\")) {
      throw new IllegalArgumentException("Invalid storage name: '" + name + "'");
    }
  }
}
