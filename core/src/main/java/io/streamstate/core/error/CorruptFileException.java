package io.streamstate.core.error;

/**
 * A durable file failed verification (bad magic, unknown kind, wrong length or checksum). Nothing
 * from it was parsed; the message names the file and what is wrong.
 */
public class CorruptFileException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  public CorruptFileException(String message) {
    super(message);
  }

  public CorruptFileException(String message, Throwable cause) {
    super(message, cause);
  }
}
