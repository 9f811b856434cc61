package io.streamstate.core.storage;

import java.util.Objects;

/**
 * What {@link Storage#list} returns about one file.
 *
 * @param name the name relative to the storage root
 * @param length size in bytes
 * @param lastModifiedMillis modification time in epoch milliseconds, as the store reports it
 */
public record FileInfo(String name, long length, long lastModifiedMillis) {
  public FileInfo {
    Objects.requireNonNull(name, "name");
  }
}
