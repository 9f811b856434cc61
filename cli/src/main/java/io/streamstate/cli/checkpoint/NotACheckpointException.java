package io.streamstate.cli.checkpoint;

/**
 * The location given is not a Spark streaming checkpoint (it does not exist, or holds neither a
 * {@code metadata} file nor an {@code offsets/} log): a usage error, not damage.
 */
public final class NotACheckpointException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  public NotACheckpointException(String message) {
    super(message);
  }
}
