package io.streamstate.core.error;

/** A durable file that must exist (to recover a version, or named by a manifest) is absent. */
public class MissingFileException extends StreamStateException {
  private static final long serialVersionUID = 1L;

  /** Where the file was looked for (a file or the directory that should hold it), or null. */
  private final String location;

  public MissingFileException(String message) {
    this(message, (String) null);
  }

  public MissingFileException(String message, Throwable cause) {
    super(message, cause);
    this.location = null;
  }

  /** {@code location}: the missing file, or the directory that should hold it. */
  public MissingFileException(String message, String location) {
    super(message);
    this.location = location;
  }

  /**
   * The missing file, or the directory that should hold it, as the storage names it (for callers
   * that report the location in a structured error, such as Spark's {@code fileToRead}); null if
   * not known.
   */
  public String location() {
    return location;
  }
}
