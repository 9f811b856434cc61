package io.streamstate.core.hedge;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.util.Objects;

/**
 * One way a hedged write makes its bytes durable: usually the create of a new file under an
 * attempt-unique name; for group commits, also an append to this process's segment journal. The two
 * copies of one publish hold the same bytes, and readers accept either.
 */
public interface HedgeCopy {

  /**
   * Makes {@code content} durable; returns the name it can be read back under.
   *
   * @throws RetryableException failed, nothing published
   * @throws OutcomeUnknownException may or may not be published
   * @throws FileAlreadyExistsException the attempt-unique name exists
   */
  String write(byte[] content);

  /**
   * Removes the copy {@link #write} published under {@code name} after it lost the race.
   *
   * @return false if this kind of copy cannot be removed (it is left for retention)
   */
  boolean discard(String name);

  /**
   * Called at most once, just before a hedge of this copy starts because it is late or failed, on
   * the publishing thread: what it reports (a late write, see {@link SupportsLateWriteReports})
   * lands before the hedge's own write begins. Must be quick and must not throw.
   */
  default void hedgeStarted() {}

  /** Where this copy goes, for messages. */
  String describe();

  /** The usual copy: {@code storage.create(name)}, discarded by deleting it. */
  static HedgeCopy create(Storage storage, String name) {
    return create(storage, name, null);
  }

  /**
   * A create of {@code name} whose bytes come from {@code content} (called once per write, so it
   * must write the same bytes every time) instead of those handed to {@link #write}; with {@code
   * content} null, those bytes. Discarded by deleting it. A hedge of it reports the create as late
   * to a storage that {@linkplain SupportsLateWriteReports takes such reports}.
   */
  static HedgeCopy create(Storage storage, String name, ContentWriter content) {
    Objects.requireNonNull(storage, "storage");
    Objects.requireNonNull(name, "name");
    return new HedgeCopy() {
      @Override
      public String write(byte[] bytes) {
        storage.create(name, content != null ? content : ContentWriter.ofBytes(bytes));
        return name;
      }

      @Override
      public boolean discard(String written) {
        storage.delete(written);
        return true;
      }

      @Override
      public void hedgeStarted() {
        if (storage instanceof SupportsLateWriteReports reports) {
          reports.reportLateWrite(name);
        }
      }

      @Override
      public String describe() {
        return storage.describe() + "/" + name;
      }
    };
  }
}
