package io.streamstate.dstream.jdbc;

/**
 * The transaction's commit failed with an error, so whether the batch is committed is not known
 * (the connection may have broken after the database committed). Nothing else is known to be wrong:
 * retry the batch, which the helper then decides from the stored state (skipped if it was
 * committed, written if not). Do not compensate or clean up on this error.
 */
public class CommitStateUnknownException extends ExactlyOnceOutputException {
  private static final long serialVersionUID = 1L;

  /** An error naming the batch, with the commit's exception as the cause. */
  public CommitStateUnknownException(String message, Throwable cause) {
    super(message, cause);
  }
}
