package io.streamstate.core.error;

/**
 * Root of every error streamstate throws. Subtypes are chosen by what the caller does next:
 *
 * <ul>
 *   <li>{@link RetryableException}: the operation failed and left nothing behind; retry it.
 *   <li>{@link OutcomeUnknownException}: the operation may or may not have taken effect; re-read
 *       before deciding, never clean up.
 *   <li>{@link ConflictException}: another writer won; step aside (the task attempt loses).
 *   <li>{@link CorruptFileException}: a durable file does not verify; nothing was parsed from it.
 *   <li>{@link MissingFileException}: a file that recovery needs is not there.
 *   <li>{@link UnsupportedException}: a store, format version or feature that this release cannot
 *       handle; a configuration change or a newer release is needed.
 * </ul>
 */
public class StreamStateException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public StreamStateException(String message) {
    super(message);
  }

  public StreamStateException(String message, Throwable cause) {
    super(message, cause);
  }
}
