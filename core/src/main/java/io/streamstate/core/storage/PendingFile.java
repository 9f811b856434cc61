package io.streamstate.core.storage;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import java.io.OutputStream;

/**
 * A new file being written ({@link SupportsStreamingCreate#openNew}): its content goes to {@link
 * #stream()}, then {@link #publish()} ends it, or {@link #withdraw()} abandons it. One writer
 * thread; {@link #withdraw()} may also be called after a failed {@link #publish()}.
 */
public interface PendingFile {
  /** The name, relative to the storage's root. */
  String name();

  /**
   * Where the content goes. Closing it only flushes: ending the file is {@link #publish()}'s job,
   * so that a writer that closes its stream cannot publish a file by accident.
   */
  OutputStream stream();

  /**
   * Makes the content durable (sync where the store syncs) and publishes it: once this returns, the
   * file is complete at its name, as after {@link Storage#create}. Nothing is withdrawn on failure;
   * the caller decides (a hedged write keeps a failed primary's name, which is its own).
   *
   * @throws RetryableException failed before completing: not published; the name may hold this
   *     writer's partial content until {@link #withdraw()}
   * @throws FileAlreadyExistsException refused at completion because the name exists (stores that
   *     check at completion: conditional create)
   * @throws OutcomeUnknownException completing failed: the file may or may not be published
   */
  void publish();

  /**
   * Leaves nothing of this writer at the name: aborts a stream that publishes only at completion,
   * else deletes the name this writer took. Quiet if nothing is there.
   *
   * @throws OutcomeUnknownException whether something of this writer is left cannot be told, or
   *     what is left cannot be removed
   */
  void withdraw();
}
