package io.streamstate.dstream.jdbc;

/**
 * The root of the exactly-once output errors: the batch was not committed (its transaction was
 * rolled back), and it is not known to be committed by anyone else. Retrying the batch is safe; the
 * helper decides again from the stored offsets. The cause is usually the {@link
 * java.sql.SQLException}.
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
