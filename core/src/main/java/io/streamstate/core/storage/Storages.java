package io.streamstate.core.storage;

import io.streamstate.core.error.RetryableException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Collection;

/** Helpers over {@link Storage} that use optional abilities when a storage has them. */
public final class Storages {
  private Storages() {}

  /** Deletes every named file, in bulk where the storage supports it. */
  public static void deleteAll(Storage storage, Collection<String> names) {
    if (names.isEmpty()) {
      return;
    }
    if (storage instanceof SupportsBulkDelete bulk) {
      bulk.deleteAll(names);
    } else {
      for (String name : names) {
        storage.delete(name);
      }
    }
  }

  /** Reads a whole (small) file. */
  public static byte[] readAll(Storage storage, String name) {
    try (InputStream in = storage.open(name)) {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new RetryableException("Cannot read " + storage.describe() + "/" + name + ": " + e, e);
    } catch (UncheckedIOException e) {
      throw new RetryableException(
          "Cannot read " + storage.describe() + "/" + name + ": " + e.getCause(), e);
    }
  }
}
