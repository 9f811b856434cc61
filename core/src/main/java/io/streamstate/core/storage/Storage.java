package io.streamstate.core.storage;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import java.io.InputStream;
import java.util.List;

/**
 * Durable storage for streamstate's files: the one interface the commit protocol writes through.
 *
 * <p>Names are relative paths with {@code /} separators ({@code "op0/part3/changelog/...log"}),
 * resolved against the root the implementation was given. Files are immutable: written once at
 * their final name, never renamed, never modified, only deleted.
 *
 * <h2>Guarantees every implementation gives</h2>
 *
 * <ol>
 *   <li><b>Create-if-absent.</b> Of any number of concurrent {@link #create} calls for one name, at
 *       most one succeeds; every other one throws {@link FileAlreadyExistsException}. A name that
 *       exists (even as a torn file left by a crashed writer) can never be created again until it
 *       is deleted. On stores that check at publish (S3's conditional PUT), a create whose name
 *       already holds exactly its bytes succeeds: a retry the store refused after the first request
 *       had landed cannot be told from another writer's identical file, and the file is the same.
 *   <li><b>Read-after-create.</b> Once {@code create} returns, {@link #open} from any process
 *       returns exactly the bytes written, and the file survives a crash of this process or machine
 *       (the implementation's durability point: fsync, hsync, or a completed PUT).
 *   <li><b>No partial success reported.</b> If {@code create} throws {@link RetryableException},
 *       nothing is left at the name. If it throws {@link OutcomeUnknownException}, the file may
 *       exist, complete or not; the caller must read it back to decide.
 * </ol>
 *
 * <p>What it does <em>not</em> guarantee: that a reader never sees a file that is still being
 * written (local disk and HDFS may show a partial file; object stores do not). That is why every
 * file streamstate writes is self-validating (see {@code docs/format.md}).
 *
 * <p>Listing ({@link #list}) may be slow and, on some stores, eventually consistent; the commit
 * path never lists. Optional abilities are separate interfaces ({@code Supports*}), checked with
 * {@code instanceof}.
 *
 * <p>All methods are thread-safe.
 */
public interface Storage extends AutoCloseable {

  /**
   * Publishes a new file with the content {@code content} writes, only if {@code name} is absent.
   *
   * @throws FileAlreadyExistsException the name exists
   * @throws RetryableException failed, nothing published
   * @throws OutcomeUnknownException may or may not be published
   */
  void create(String name, ContentWriter content);

  /**
   * Opens a file for reading.
   *
   * @throws MissingFileException the file does not exist
   * @throws RetryableException the read failed
   */
  InputStream open(String name);

  /**
   * Deletes a file; deleting an absent file is not an error.
   *
   * @return true if the file existed
   */
  boolean delete(String name);

  /**
   * Lists the files whose names start with {@code prefix}, sorted by name. Only maintenance,
   * recovery and tools call this, never the commit path.
   */
  List<FileInfo> list(String prefix);

  /** A URI-like description of where this storage keeps its files, for error messages. */
  String describe();

  @Override
  default void close() {}
}
