package io.streamstate.core.storage;

import io.streamstate.core.error.ConflictException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.error.UnsupportedException;

/**
 * An optional ability: files that one writer extends over time, each append durable when it returns
 * (fsync, HDFS {@code hsync}), so that many small durable writes cost one file instead of one file
 * each. Object stores have no such thing; local disk and HDFS do.
 *
 * <h2>Guarantees</h2>
 *
 * <ol>
 *   <li><b>Create-if-absent</b>, as {@link Storage#create}: of concurrent {@link #createAppendable}
 *       calls for one name at most one succeeds.
 *   <li><b>Read-after-append.</b> Once {@link AppendableFile#append} returns, {@link Storage#open}
 *       from any process reads the file at least through those bytes, while the writer is still
 *       appending, after it closed, and after it died; and the bytes survive a crash of the
 *       writer's process or machine.
 *   <li><b>Nothing after a failure.</b> An append that fails may have left any prefix of its bytes
 *       in the file ({@link OutcomeUnknownException}); the file is then closed for appends, so
 *       whatever a reader finds after the last complete append is the one failed append's prefix,
 *       never anything later.
 * </ol>
 *
 * <p>A reader may see a partial append of a writer that is still appending: what is appended must
 * be self-validating, as every streamstate file is.
 */
public interface SupportsAppend {

  /**
   * Whether this storage instance can append (a class may implement this interface for stores that
   * can and refuse on others, such as {@code HadoopStorage} on an object store).
   */
  boolean appendSupported();

  /**
   * Creates {@code name}, only if it is absent, and returns the writer that appends to it.
   *
   * @throws FileAlreadyExistsException the name exists
   * @throws RetryableException failed, nothing created
   * @throws OutcomeUnknownException the name may have been created
   * @throws UnsupportedException this storage cannot append
   */
  AppendableFile createAppendable(String name);

  /**
   * Stops every other writer of {@code name}: once this returns, no append by a writer that created
   * the file earlier can succeed any more, and what a reader finds in it no longer changes (HDFS:
   * lease recovery closes the file; local disk: a writer holds a lock on the file while it has it
   * open, so a live writer cannot be stopped and is reported instead). An absent name is nothing to
   * fence. For logs whose next writer must be the only one (a restarted driver).
   *
   * @throws ConflictException a live writer holds the file and cannot be stopped from here
   * @throws RetryableException fencing did not complete
   * @throws UnsupportedException this storage cannot fence
   */
  void fence(String name);
}
