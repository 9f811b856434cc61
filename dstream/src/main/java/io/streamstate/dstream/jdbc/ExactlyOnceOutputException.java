package io.streamstate.dstream.jdbc;

/**
 * The root of the exactly-once output errors. This class itself means the batch was not committed
 * (its transaction was rolled back), and retrying it is safe: the helper decides again from the
 * stored state. Subtypes say what to do instead: {@link OffsetMismatchException} (retrying does not
 * help: the stream does not continue the stored offsets), {@link CommitStateUnknownException} (the
 * commit may have happened; retry, the batch is then skipped if it did). The cause is usually the
 * {@link java.sql.SQLException}.
 */
public class ExactlyOnceOutputException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** An error with a message saying what failed and on which batch, and its cause. */
  public ExactlyOnceOutputException(String message, Throwable cause) {
    super(message, cause);
  }

  /** An error with a message saying what failed and on which batch. */
  public ExactlyOnceOutputException(String message) {
    super(message);
  }
}
