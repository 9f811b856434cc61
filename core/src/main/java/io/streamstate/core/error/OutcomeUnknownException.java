package io.streamstate.core.error;

/**
 * The operation may or may not have taken effect (for example a write whose acknowledgement was
 * lost). Do not clean up what it may have written: read back to decide.
 */
public class OutcomeUnknownException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public OutcomeUnknownException(String message) {
    super(message);
  }

  public OutcomeUnknownException(String message, Throwable cause) {
    super(message, cause);
  }
}
