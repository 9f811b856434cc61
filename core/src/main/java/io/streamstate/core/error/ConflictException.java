package io.streamstate.core.error;

/**
 * Another writer already published what this one tried to publish (a task retry, a speculative
 * attempt or a zombie). The caller lost and must step aside; retrying the same write cannot
 * succeed.
 */
public class ConflictException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public ConflictException(String message) {
    super(message);
  }

  public ConflictException(String message, Throwable cause) {
    super(message, cause);
  }
}
