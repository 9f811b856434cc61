package io.streamstate.core.error;

/** The operation failed and left no trace (nothing was published); it is safe to retry. */
public class RetryableException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public RetryableException(String message) {
    super(message);
  }

  public RetryableException(String message, Throwable cause) {
    super(message, cause);
  }
}
