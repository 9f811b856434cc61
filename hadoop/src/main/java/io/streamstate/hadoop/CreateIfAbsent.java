package io.streamstate.hadoop;

import io.streamstate.core.error.RetryableException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.ipc.RemoteException;

/**
 * How a Hadoop file system gives create-if-absent, and how to read its refusals. Shared by {@link
 * HadoopStorage} and the Spark adapter's checkpoint file manager, so that both detect the same way
 * and both tell "another writer took the name" from any other failure the same way.
 *
 * <p>Classes of optional Hadoop modules (HDFS, S3A) are matched by name, so that this class loads
 * on clusters without them.
 */
public final class CreateIfAbsent {
  /**
   * The path capability and {@code createFile()} option of conditional create ({@code
   * org.apache.hadoop.fs.Options.CreateFileOptionKeys.FS_OPTION_CREATE_CONDITIONAL_OVERWRITE},
   * Hadoop 3.4.2+; spelled out so that this class loads on older Hadoop).
   */
  public static final String CONDITIONAL_CREATE_CAPABILITY =
      "fs.option.create.conditional.overwrite";

  /**
   * The path capability by which any Hadoop file system declares that {@code create(path,
   * overwrite=false)} under that path is an atomic create-if-absent: of racing creators exactly one
   * gets a stream, every other gets {@code org.apache.hadoop.fs.FileAlreadyExistsException} (or
   * {@code java.nio.file.FileAlreadyExistsException}) from {@code create}. A store declaring it is
   * used like HDFS ({@link Method#EXCLUSIVE_CREATE}). For file systems written for, or wrapped
   * around, a store that gives this (test and simulation file systems, in-house wrappers); Hadoop's
   * own file systems do not declare it.
   */
  public static final String EXCLUSIVE_CREATE_CAPABILITY = "streamstate.fs.create.exclusive";

  /**
   * The path capability by which a file system with {@link #EXCLUSIVE_CREATE_CAPABILITY} declares
   * that its output streams are readable by other clients while open and that {@code hsync} makes
   * what was written durable and visible to new readers, as HDFS does: streamstate then appends its
   * segment journals there. HDFS is recognized without it.
   */
  public static final String APPEND_HSYNC_CAPABILITY = "streamstate.fs.append.hsync";

  private static final String HDFS_FILE_SYSTEM = "org.apache.hadoop.hdfs.DistributedFileSystem";
  private static final String HDFS_ALREADY_BEING_CREATED =
      "org.apache.hadoop.hdfs.protocol.AlreadyBeingCreatedException";
  private static final String S3A_REMOTE_FILE_CHANGED =
      "org.apache.hadoop.fs.s3a.RemoteFileChangedException";

  /** How a store gives create-if-absent. */
  public enum Method {
    /** {@code java.nio} CREATE_NEW on the local file behind the Hadoop path. */
    LOCAL_EXCLUSIVE,
    /**
     * {@code create(overwrite=false)}, atomic in the store (HDFS NameNode, or a store declaring
     * {@value CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY}).
     */
    EXCLUSIVE_CREATE,
    /** {@code createFile()} with {@value #CONDITIONAL_CREATE_CAPABILITY}: refused at close. */
    CONDITIONAL_CREATE,
    /** {@code exists()} then {@code create(overwrite=false)}: not atomic; only when accepted. */
    SINGLE_WRITER
  }

  private CreateIfAbsent() {}

  /**
   * The method the store at {@code path} gives, or empty if it gives none ({@link
   * Method#SINGLE_WRITER} is never detected, only accepted).
   *
   * @throws RetryableException the capability probe failed
   */
  public static Optional<Method> detect(FileSystem fs, Path path) {
    if (rawLocal(fs) != null) {
      return Optional.of(Method.LOCAL_EXCLUSIVE);
    }
    if (isInstanceOf(fs.getClass(), HDFS_FILE_SYSTEM)) {
      return Optional.of(Method.EXCLUSIVE_CREATE);
    }
    try {
      if (fs.hasPathCapability(path, EXCLUSIVE_CREATE_CAPABILITY)) {
        return Optional.of(Method.EXCLUSIVE_CREATE);
      }
      if (fs.hasPathCapability(path, CONDITIONAL_CREATE_CAPABILITY)) {
        return Optional.of(Method.CONDITIONAL_CREATE);
      }
    } catch (IOException e) {
      throw new RetryableException(
          "Cannot probe " + path + " for create-if-absent capabilities: " + e, e);
    }
    return Optional.empty();
  }

  /**
   * Whether files under {@code path} can be appended to by one open stream with {@code hsync}, for
   * a store whose create-if-absent is {@code method}: local file systems, HDFS, and file systems
   * declaring {@value #APPEND_HSYNC_CAPABILITY}.
   */
  static boolean canAppend(FileSystem fs, Path path, Method method) {
    if (method == Method.LOCAL_EXCLUSIVE) {
      return true;
    }
    if (method != Method.EXCLUSIVE_CREATE) {
      return false;
    }
    if (isInstanceOf(fs.getClass(), HDFS_FILE_SYSTEM)) {
      return true;
    }
    try {
      return fs.hasPathCapability(path, APPEND_HSYNC_CAPABILITY);
    } catch (IOException e) {
      throw new RetryableException("Cannot probe " + path + " for append capabilities: " + e, e);
    }
  }

  /** Whether {@code fs} is HDFS's {@code DistributedFileSystem} (or a subclass). */
  static boolean isHdfs(FileSystem fs) {
    return isInstanceOf(fs.getClass(), HDFS_FILE_SYSTEM);
  }

  /** The raw local file system behind {@code fs}, or null if it is not a local one. */
  public static RawLocalFileSystem rawLocal(FileSystem fs) {
    if (fs instanceof RawLocalFileSystem raw) {
      return raw;
    }
    if (fs instanceof LocalFileSystem local
        && local.getRawFileSystem() instanceof RawLocalFileSystem raw) {
      return raw;
    }
    return null;
  }

  /** Whether a failed create means that the name was taken (by another writer). */
  public static boolean isNameTaken(Throwable e) {
    for (Throwable t : causalChain(e)) {
      if (t instanceof FileAlreadyExistsException
          // java.nio's exception of the same simple name: kept qualified.
          || t instanceof java.nio.file.FileAlreadyExistsException
          || t.getClass().getName().equals(HDFS_ALREADY_BEING_CREATED)) {
        return true;
      }
      // HDFS: the loser sees the file existing, or, while the winner still writes it with the
      // same client (same lease holder), AlreadyBeingCreatedException, sent as a RemoteException.
      if (t instanceof RemoteException remote
          && (remote.getClassName().equals(HDFS_ALREADY_BEING_CREATED)
              || remote.getClassName().equals(FileAlreadyExistsException.class.getName()))) {
        return true;
      }
    }
    return false;
  }

  /**
   * Whether a failed conditional create (at close) was refused because the name exists: S3A turns
   * the 412 of a conditional PUT into {@code RemoteFileChangedException}.
   */
  public static boolean isConditionalCreateRefused(Throwable e) {
    for (Throwable t : causalChain(e)) {
      if (isInstanceOf(t.getClass(), S3A_REMOTE_FILE_CHANGED)) {
        return true;
      }
    }
    return isNameTaken(e);
  }

  private static boolean isInstanceOf(Class<?> type, String className) {
    for (Class<?> c = type; c != null; c = c.getSuperclass()) {
      if (c.getName().equals(className)) {
        return true;
      }
    }
    return false;
  }

  private static List<Throwable> causalChain(Throwable e) {
    List<Throwable> chain = new ArrayList<>();
    for (Throwable t = e; t != null && !chain.contains(t); t = t.getCause()) {
      chain.add(t);
    }
    return chain;
  }
}
