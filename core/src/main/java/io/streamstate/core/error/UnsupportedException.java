package io.streamstate.core.error;

/**
 * Something this release cannot do: an unknown format version, a store without create-if-absent, an
 * unsupported feature. The message says what to change.
 */
public class UnsupportedException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public UnsupportedException(String message) {
    super(message);
  }

  public UnsupportedException(String message, Throwable cause) {
    super(message, cause);
  }
}
