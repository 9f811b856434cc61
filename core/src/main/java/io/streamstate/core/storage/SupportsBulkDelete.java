package io.streamstate.core.storage;

import java.util.Collection;

/** An optional ability: deleting many files in fewer requests (S3 DeleteObjects, for example). */
public interface SupportsBulkDelete {
  /** Deletes every named file; absent names are ignored. */
  void deleteAll(Collection<String> names);
}
