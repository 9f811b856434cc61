package io.streamstate.core.error;

import io.streamstate.core.storage.Storage;

/**
 * A create-if-absent publish found the name taken. Raised by {@link Storage#create}; the commit
 * protocol turns it into a {@link ConflictException} with store and version, or into success when
 * the existing file holds the same content (an idempotent retry).
 */
public class FileAlreadyExistsException extends ConflictException {
  private static final long serialVersionUID = 1L;
  private final String name;

  public FileAlreadyExistsException(String name) {
    super("File already exists: " + name);
    this.name = name;
  }

  /** The storage name that was taken. */
  public String name() {
    return name;
  }
}
