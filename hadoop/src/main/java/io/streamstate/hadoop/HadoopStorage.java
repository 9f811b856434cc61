package io.streamstate.hadoop;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.FileInfo;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.PendingFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.StreamAppendableFile;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsBulkDelete;
import io.streamstate.core.storage.SupportsLateWriteReports;
import io.streamstate.core.storage.SupportsStreamingCreate;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocatedFileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.RemoteIterator;
import org.apache.hadoop.fs.StreamCapabilities;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link Storage} over a Hadoop {@link FileSystem}, rooted at a directory of it.
 *
 * <h2>How create-if-absent is obtained</h2>
 *
 * <p>The {@link Storage} contract needs an atomic create-if-absent; Hadoop's {@code FileSystem} API
 * does not promise one, so it is chosen per store when the storage is opened (see {@link
 * #supportsCreateIfAbsent}):
 *
 * <table>
 *   <caption>Create-if-absent per store</caption>
 *   <tr><th>store</th><th>how</th><th>a loser learns it</th></tr>
 *   <tr><td>HDFS ({@code DistributedFileSystem}), and any file system declaring the path
 *       capability {@value CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY}</td>
 *       <td>{@code create(path, overwrite=false)}: the NameNode checks and creates under its lock
 *       and the writer's lease</td>
 *       <td>in {@code create}</td></tr>
 *   <tr><td>stores declaring the path capability {@value #CONDITIONAL_CREATE_CAPABILITY} (S3A on
 *       Hadoop 3.4.2+ with {@code fs.s3a.create.conditional.enabled}, the default)</td>
 *       <td>{@code createFile(path)} with that option: a PUT with {@code If-None-Match: *} at
 *       {@code close()}</td>
 *       <td>in {@code close()} (HTTP 412)</td></tr>
 *   <tr><td>local ({@code RawLocalFileSystem}, {@code LocalFileSystem})</td>
 *       <td>{@code java.nio} {@code CREATE_NEW} ({@code O_EXCL}) through the core's {@link
 *       LocalStorage}: Hadoop's local {@code create(overwrite=false)} is exists-then-truncate, not
 *       atomic, and forks {@code chmod} per file (and every other call goes through it too: its
 *       listing forks {@code ls} per file)</td>
 *       <td>in {@code create}</td></tr>
 * </table>
 *
 * <p>Any other store is refused by {@link #open} with an {@link UnsupportedException}. {@link
 * #openAllowingSingleWriter} accepts it in <em>single-writer mode</em>: {@code exists()} then
 * {@code create(overwrite=false)}, which is safe only if no two writers ever race for a name.
 *
 * <h2>Outcomes of {@link #create}</h2>
 *
 * <ul>
 *   <li>Anything fails before the stream is closed (opening it, the {@link ContentWriter}, a write,
 *       {@code hsync}): what was written is withdrawn, by {@code abort()} on streams that publish
 *       only at close (object stores) or by deleting the name this writer created (HDFS, single
 *       writer), and the failure is a {@link RetryableException} (an unchecked exception of the
 *       writer is rethrown as it is). If the withdrawal itself fails, {@link
 *       OutcomeUnknownException}; likewise if a {@code create} call that claims the name (HDFS)
 *       timed out, since the store may have executed it.
 *   <li>{@code close()} fails: the file may or may not be published, {@link
 *       OutcomeUnknownException}; nothing is deleted. Except a conditional create refused at close
 *       (412): the object at the name is read back; if it holds exactly the bytes written (SHA-256
 *       of what went through the stream), the create succeeded: a 5xx answer to a PUT that had
 *       landed makes the client send it again, and the store refuses that retry. Else {@link
 *       FileAlreadyExistsException}; if it cannot be read, {@link OutcomeUnknownException}.
 * </ul>
 *
 * <p>Durability: on streams that declare {@code hsync} (HDFS) the data is synced to the DataNodes'
 * disks before close; object stores are durable when the PUT completes.
 *
 * <h2>Appends ({@link SupportsAppend})</h2>
 *
 * <p>On HDFS, and on stores declaring {@value CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY} and
 * {@value CreateIfAbsent#APPEND_HSYNC_CAPABILITY} whose streams declare {@code hsync}: {@code
 * createAppendable} creates the file with {@code create(overwrite=false)} and keeps its stream
 * open; each append is a write and an {@code hsync}, which on HDFS goes to the DataNode pipeline
 * only (no NameNode request, except a block allocation per block), and readers see the synced bytes
 * of a file still being written. On local file systems, through {@link LocalStorage}. Object stores
 * (conditional create) and single-writer mode cannot append ({@link #appendSupported()} false).
 *
 * <h2>Slow DataNodes ({@link SupportsLateWriteReports})</h2>
 *
 * <p>On file systems with DataNode pipelines (HDFS, and any implementing {@link
 * SupportsDataNodePipelines}), every create, appendable or not, goes through {@link
 * DataNodePlacement}: while its cluster's {@link SlowDataNodes} suspects some DataNodes, the file
 * is created on favoured ones away from them. A completed {@code hsync} tells it which DataNodes
 * work; {@link #reportLateWrite} of a create in flight or of an open appendable file makes the
 * DataNodes of its pipeline suspect; {@link #isSuspectedSlow} says whether an open appendable
 * file's pipeline holds a suspect. Elsewhere these do nothing.
 *
 * <p>The steps of a create on a Hadoop store (t0-t2, withdrawal) are {@link HadoopFileCreator}'s;
 * this class routes each call (local disk, appends, fencing, reads, listing).
 *
 * <p>{@link #close()} does not close the {@code FileSystem}: Hadoop caches and shares instances.
 * Runs on Hadoop 3.3.4 and later (bulk delete where the Hadoop has it: {@link HadoopCompat}).
 * Thread-safe.
 *
 * <p>Over 600 lines because it is the one router of the storage interfaces it implements (five) and
 * of the store-selection table above; each step of a create is {@link HadoopFileCreator}'s,
 * placement {@link DataNodePlacement}'s, version differences {@link HadoopCompat}'s.
 */
public final class HadoopStorage
    implements Storage,
        SupportsBulkDelete,
        SupportsAppend,
        SupportsLateWriteReports,
        SupportsStreamingCreate {
  private static final Logger LOG = LoggerFactory.getLogger(HadoopStorage.class);

  /**
   * The path capability and {@code createFile()} option of conditional create ({@code
   * org.apache.hadoop.fs.Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE},
   * Hadoop 3.4.2+; spelled out so that this class loads on older Hadoop).
   */
  public static final String CONDITIONAL_CREATE_CAPABILITY =
      CreateIfAbsent.CONDITIONAL_CREATE_CAPABILITY;

  /**
   * File systems already warned about single-writer mode: warn once per process and file system (a
   * component of the process's {@link ProcessResources}).
   */
  private static final class SingleWriterWarnings {
    final Set<String> warned = ConcurrentHashMap.newKeySet();
  }

  private final FileSystem fs;
  private final Path root;

  /** The path part of {@link #root}, ending with {@code /}. */
  private final String rootPath;

  private final CreateIfAbsent.Method method;

  /** Creates on a local file system; null elsewhere. */
  private final LocalStorage localCreates;

  /** Whether {@link #createAppendable} works here. */
  private final boolean appendable;

  /** Writes new files (all but local ones): create-if-absent, placement, late reports. */
  private final HadoopFileCreator creates;

  private HadoopStorage(
      FileSystem fileSystem,
      Path root,
      CreateIfAbsent.Method method,
      ProcessResources resources,
      SlowDataNodes slow) {
    RawLocalFileSystem local = CreateIfAbsent.rawLocal(fileSystem);
    // On the checksummed LocalFileSystem use its raw file system: our files verify themselves,
    // and .crc side files would show up next to them and could go stale.
    this.fs = local != null ? local : fileSystem;
    this.root = this.fs.makeQualified(root);
    String path = this.root.toUri().getPath();
    this.rootPath = path.endsWith("/") ? path : path + "/";
    this.method = method;
    this.localCreates =
        method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE
            ? new LocalStorage(local.pathToFile(this.root).toPath())
            : null;
    this.appendable = CreateIfAbsent.canAppend(this.fs, this.root, method);
    DataNodePlacement placement =
        slow != null
            ? DataNodePlacement.of(this.fs, slow, resources)
            : DataNodePlacement.of(this.fs, resources);
    this.creates = new HadoopFileCreator(this.fs, this.root, method, placement);
  }

  /**
   * A storage under {@code root} of {@code fs}, if that store gives create-if-absent, sharing this
   * process's resources ({@link ProcessResources#shared()}): {@link #open(FileSystem, Path,
   * ProcessResources)}.
   *
   * @throws UnsupportedException the store does not (the message names the setting that accepts
   *     single-writer mode instead)
   */
  public static HadoopStorage open(FileSystem fs, Path root) {
    return open(fs, root, ProcessResources.shared());
  }

  /**
   * A storage under {@code root} of {@code fs}, if that store gives create-if-absent; DataNodes are
   * tracked by the cluster's tracking that {@code resources} holds.
   *
   * @throws UnsupportedException the store does not (the message names the setting that accepts
   *     single-writer mode instead)
   */
  public static HadoopStorage open(FileSystem fs, Path root, ProcessResources resources) {
    Objects.requireNonNull(fs, "fs");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(resources, "resources");
    CreateIfAbsent.Method method =
        CreateIfAbsent.detect(fs, root)
            .orElseThrow(() -> new UnsupportedException(noCreateIfAbsentMessage(fs, root)));
    return new HadoopStorage(fs, root, method, resources, null);
  }

  /**
   * A storage under {@code root} of {@code fs} that creates files by {@code method}, which the
   * caller detected ({@link CreateIfAbsent#detect}) and, for single-writer mode, accepted and
   * warned about itself (the checkpoint file manager, whose checks name Spark's settings).
   */
  public static HadoopStorage openWith(
      FileSystem fs, Path root, CreateIfAbsent.Method method, ProcessResources resources) {
    Objects.requireNonNull(fs, "fs");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(method, "method");
    Objects.requireNonNull(resources, "resources");
    return new HadoopStorage(fs, root, method, resources, null);
  }

  /**
   * As {@link #open(FileSystem, Path)}, with DataNodes tracked by {@code slow} instead of the
   * cluster's shared tracking (tests).
   */
  static HadoopStorage open(FileSystem fs, Path root, SlowDataNodes slow) {
    Objects.requireNonNull(fs, "fs");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(slow, "slow");
    CreateIfAbsent.Method method =
        CreateIfAbsent.detect(fs, root)
            .orElseThrow(() -> new UnsupportedException(noCreateIfAbsentMessage(fs, root)));
    return new HadoopStorage(fs, root, method, ProcessResources.shared(), slow);
  }

  /**
   * {@link #openAllowingSingleWriter(FileSystem, Path, ProcessResources)} with this process's
   * resources ({@link ProcessResources#shared()}).
   */
  public static HadoopStorage openAllowingSingleWriter(FileSystem fs, Path root) {
    return openAllowingSingleWriter(fs, root, ProcessResources.shared());
  }

  /**
   * A storage under {@code root} of {@code fs} that falls back to single-writer mode ({@code
   * exists()} then {@code create(overwrite=false)}, logged as a warning once per file system and
   * {@code resources}) where the store gives no create-if-absent. Use only where a single writer is
   * guaranteed by other means.
   */
  public static HadoopStorage openAllowingSingleWriter(
      FileSystem fs, Path root, ProcessResources resources) {
    Objects.requireNonNull(fs, "fs");
    Objects.requireNonNull(root, "root");
    Objects.requireNonNull(resources, "resources");
    Optional<CreateIfAbsent.Method> method = CreateIfAbsent.detect(fs, root);
    if (method.isEmpty()
        && resources
            .component(SingleWriterWarnings.class, SingleWriterWarnings::new)
            .warned
            .add(fs.getUri().toString())) {
      LOG.warn(
          "{} ({}) does not guarantee create-if-absent; streamstate runs it in single-writer mode"
              + " ({}=true): two concurrent writers of one file (a task retry, a speculative or a"
              + " zombie attempt) can both believe they won, and state can be lost or corrupted.",
          fs.getUri(),
          fs.getClass().getName(),
          HadoopStorages.SPARK_ALLOW_SINGLE_WRITER);
    }
    return new HadoopStorage(
        fs, root, method.orElse(CreateIfAbsent.Method.SINGLE_WRITER), resources, null);
  }

  /**
   * Whether {@code fs} gives an atomic create-if-absent under {@code path}: HDFS and local file
   * systems do; others do if they declare the path capability {@value
   * CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY} (atomic {@code create(overwrite=false)}) or {@value
   * #CONDITIONAL_CREATE_CAPABILITY} (S3A with conditional create enabled); anything else is assumed
   * not to.
   *
   * @throws RetryableException the capability probe failed
   */
  public static boolean supportsCreateIfAbsent(FileSystem fs, Path path) {
    return CreateIfAbsent.detect(fs, path).isPresent();
  }

  private static String noCreateIfAbsentMessage(FileSystem fs, Path root) {
    return "Storage "
        + root
        + " ("
        + fs.getClass().getName()
        + ") does not guarantee create-if-absent, which streamstate needs so that of two writers"
        + " of one file (a task retry, a speculative or a zombie attempt) exactly one wins."
        + " Supported: hdfs, local files, and stores with conditional create (s3a on Hadoop"
        + " 3.4.2+ with fs.s3a.create.conditional.enabled=true, against a store that supports"
        + " If-None-Match), and file systems declaring the path capability "
        + CreateIfAbsent.EXCLUSIVE_CREATE_CAPABILITY
        + ". If only one writer can ever write under this location, set "
        + HadoopStorages.SPARK_ALLOW_SINGLE_WRITER
        + "=true (or the Hadoop setting "
        + HadoopStorages.ALLOW_SINGLE_WRITER
        + "=true) to accept that risk.";
  }

  /** The file system this storage uses (for a local file system, its raw file system). */
  public FileSystem fileSystem() {
    return fs;
  }

  /** The qualified root directory. */
  public Path root() {
    return root;
  }

  /** False in single-writer mode, where concurrent creators of one name may both succeed. */
  public boolean guaranteesCreateIfAbsent() {
    return method != CreateIfAbsent.Method.SINGLE_WRITER;
  }

  // ---- create ----

  @Override
  public void create(String name, ContentWriter content) {
    Objects.requireNonNull(content, "content");
    Path path = resolve(name);
    if (method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE) {
      localCreates.create(name, content);
      return;
    }
    creates.create(name, path, content);
  }

  /**
   * {@inheritDoc}
   *
   * <p>The create of {@link #create}, with the same table of outcomes; {@code overwrite} replaces a
   * file at the name ({@code create(overwrite=true)} on HDFS and in single-writer mode, a plain PUT
   * on object stores, delete then {@code CREATE_NEW} on local disk). The pending file is watched
   * for late reports ({@link #reportLateWrite}) until published or withdrawn.
   */
  @Override
  public PendingFile openNew(String name, boolean overwrite) {
    if (method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE) {
      return localCreates.openNew(name, overwrite);
    }
    return creates.openNew(name, resolve(name), overwrite);
  }

  @Override
  public boolean appendSupported() {
    return appendable;
  }

  @Override
  public AppendableFile createAppendable(String name) {
    if (method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE) {
      return localCreates.createAppendable(name);
    }
    if (!appendable) {
      throw new UnsupportedException(
          describe()
              + " cannot append: appends need HDFS, a local file system, or a file system declaring "
              + CreateIfAbsent.APPEND_HSYNC_CAPABILITY);
    }
    Path path = resolve(name);
    FSDataOutputStream out = creates.openStream(name, path, false);
    if (!out.hasCapability(StreamCapabilities.HSYNC)) {
      UnsupportedException e =
          new UnsupportedException(
              describe() + " cannot append: its output streams do not declare hsync");
      creates.withdraw(name, path, out, e);
      throw e;
    }
    return new HadoopAppendableFile(name, out, creates.watch(name, out));
  }

  /**
   * {@inheritDoc}
   *
   * <p>Where pipelines are tracked: the DataNodes of the pipeline of the create in flight or the
   * open appendable file {@code name} become suspect (its cluster's {@link SlowDataNodes}).
   */
  @Override
  public void reportLateWrite(String name) {
    creates.reportLateWrite(name);
  }

  /**
   * {@inheritDoc}
   *
   * <p>Where pipelines are tracked: whether the pipeline the open appendable file {@code name} last
   * synced through holds a suspect DataNode, and enough DataNodes are known to work to place a new
   * file away from every suspect (not on a cluster of one DataNode, say).
   */
  @Override
  public boolean isSuspectedSlow(String name) {
    return creates.isSuspectedSlow(name);
  }

  /**
   * Whether {@link #fence} works here: local file systems, and file systems that recover leases.
   */
  public boolean canFence() {
    return method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE
        || (appendable && HadoopCompat.leaseRecoverer(fs) != null);
  }

  /** How long {@link #fence} waits for lease recovery at most. */
  private static final long FENCE_TIMEOUT_MILLIS = 120_000;

  /**
   * {@inheritDoc}
   *
   * <p>Local file systems: through {@link LocalStorage} (the file's lock). Elsewhere the file
   * system must recover leases ({@code recoverLease(Path)}: HDFS): {@code recoverLease} is called
   * until the NameNode reports the file closed (block recovery can take seconds), at most two
   * minutes.
   */
  @Override
  public void fence(String name) {
    if (method == CreateIfAbsent.Method.LOCAL_EXCLUSIVE) {
      localCreates.fence(name);
      return;
    }
    HadoopCompat.LeaseRecoverer leases = appendable ? HadoopCompat.leaseRecoverer(fs) : null;
    if (leases == null) {
      throw new UnsupportedException(
          describe() + " cannot fence a writer: its file system does not recover leases");
    }
    Path path = resolve(name);
    long deadline = System.nanoTime() + FENCE_TIMEOUT_MILLIS * 1_000_000;
    try {
      while (!leases.recoverLease(path)) {
        if (System.nanoTime() > deadline) {
          throw new RetryableException(
              "Lease recovery of "
                  + where(name)
                  + " did not complete within "
                  + FENCE_TIMEOUT_MILLIS / 1000
                  + " s");
        }
        Thread.sleep(100);
      }
    } catch (FileNotFoundException e) {
      // nothing to fence
    } catch (IOException e) {
      throw new RetryableException("Cannot fence " + where(name) + ": " + e, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new RetryableException("Interrupted while fencing " + where(name), e);
    }
  }

  /** An open stream that each append writes to and hsyncs. */
  private final class HadoopAppendableFile extends StreamAppendableFile {
    private final FSDataOutputStream out;
    final DataNodePlacement.TrackedWrite tracked;

    HadoopAppendableFile(
        String name, FSDataOutputStream out, DataNodePlacement.TrackedWrite tracked) {
      super(name, where(name));
      this.out = out;
      this.tracked = tracked;
    }

    @Override
    protected void writeAndSync(byte[] bytes) throws IOException {
      out.write(bytes);
      tracked.wrote(bytes.length);
      tracked.hsync();
    }

    @Override
    protected void closeStream() throws IOException {
      creates.unwatch(name(), tracked);
      out.close();
    }
  }

  // ---- open, delete, list ----

  @Override
  public InputStream open(String name) {
    if (localCreates != null) {
      return localCreates.open(name); // java.nio: Hadoop's local file system forks per file
    }
    Path path = resolve(name);
    try {
      return fs.open(path);
    } catch (FileNotFoundException e) {
      throw new MissingFileException("File not found: " + where(name), e);
    } catch (IOException e) {
      throw new RetryableException("Cannot open " + where(name) + ": " + e, e);
    }
  }

  @Override
  public boolean delete(String name) {
    if (localCreates != null) {
      return localCreates.delete(name);
    }
    Path path = resolve(name);
    try {
      return fs.delete(path, false);
    } catch (IOException e) {
      throw new RetryableException("Cannot delete " + where(name) + ": " + e, e);
    }
  }

  @Override
  public void deleteAll(Collection<String> names) {
    if (names.isEmpty()) {
      return;
    }
    if (localCreates != null) {
      names.forEach(localCreates::delete);
      return;
    }
    HadoopCompat.deleteAll(fs, root, names.stream().map(this::resolve).toList(), describe());
  }

  @Override
  public List<FileInfo> list(String prefix) {
    Objects.requireNonNull(prefix, "prefix");
    if (localCreates != null) {
      // java.nio: Hadoop's local listing forks a process per file for its permissions, and fails
      // on a file deleted while it lists.
      return localCreates.list(prefix);
    }
    // List only the deepest directory the prefix names completely; filter the rest by name.
    int slash = prefix.lastIndexOf('/');
    String dirName = slash < 0 ? "" : prefix.substring(0, slash);
    Path dir = isValidName(dirName) ? resolve(dirName) : root;
    // A directory created while the listing starts (the first file of a store) makes some stores
    // report it missing and then present: list again, a few times, before giving up.
    for (int attempt = 0; ; attempt++) {
      try {
        return listOnce(dir, prefix);
      } catch (RetryableException e) {
        if (attempt >= 2 || !(e.getCause() instanceof FileNotFoundException)) {
          throw e;
        }
      }
    }
  }

  private List<FileInfo> listOnce(Path dir, String prefix) {
    List<FileInfo> result = new ArrayList<>();
    try {
      RemoteIterator<LocatedFileStatus> files = fs.listFiles(dir, true);
      while (files.hasNext()) {
        LocatedFileStatus file = files.next();
        String path = file.getPath().toUri().getPath();
        if (!path.startsWith(rootPath)) {
          continue;
        }
        String name = path.substring(rootPath.length());
        if (name.startsWith(prefix)) {
          result.add(new FileInfo(name, file.getLen(), file.getModificationTime()));
        }
      }
    } catch (FileNotFoundException e) {
      // The directory is absent (nothing to list), or a part of it went away while listing.
      if (!exists(dir)) {
        return List.of();
      }
      throw new RetryableException("Listing " + dir + " changed while listing, retry: " + e, e);
    } catch (IOException e) {
      // HDFS refuses to list under a file with AccessControlException "(is not a directory)".
      if (liesUnderFile(dir)) {
        return List.of();
      }
      throw new RetryableException("Cannot list " + dir + ": " + e, e);
    }
    result.sort(Comparator.comparing(FileInfo::name));
    return result;
  }

  private boolean exists(Path dir) {
    try {
      return fs.exists(dir);
    } catch (IOException e) {
      throw new RetryableException("Cannot list " + dir + ": " + e, e);
    }
  }

  /** Whether an ancestor of {@code dir} is a file: positive proof that {@code dir} is absent. */
  private boolean liesUnderFile(Path dir) {
    for (Path p = dir.getParent(); p != null; p = p.getParent()) {
      try {
        return !fs.getFileStatus(p).isDirectory();
      } catch (IOException e) {
        // absent, or itself under a file: look further up
      }
    }
    return false;
  }

  @Override
  public String describe() {
    return root.toString();
  }

  /** Does not close the {@link FileSystem}: Hadoop caches and shares instances. */
  @Override
  public void close() {}

  @Override
  public String toString() {
    return "HadoopStorage[" + root + ", " + method + "]";
  }

  private String where(String name) {
    return root + "/" + name;
  }

  private Path resolve(String name) {
    if (!isValidName(name)) {
      throw new IllegalArgumentException("Invalid storage name: '" + name + "'");
    }
    // Built from parts: the single-string constructor would read "a:b" as a URI scheme.
    return new Path(root.toUri().getScheme(), root.toUri().getAuthority(), rootPath + name);
  }

  /** Relative, no empty or {@code ..} segment (Hadoop would normalize those into other names). */
  private static boolean isValidName(String name) {
    return !name.isEmpty()
        && !name.startsWith("/")
        && !name.endsWith("/")
        && !name.contains("//")
        && !name.contains("..")
        && !name.contains("\\");
  }
}
