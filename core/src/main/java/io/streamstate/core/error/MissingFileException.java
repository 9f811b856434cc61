package io.streamstate.core.error;

/** A durable file that must exist (to recover a version, or named by a manifest) is absent. */
public class MissingFileException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public MissingFileException(String message) {
    super(message);
  }

  public MissingFileException(String message, Throwable cause) {
    super(message, cause);
  }
}
