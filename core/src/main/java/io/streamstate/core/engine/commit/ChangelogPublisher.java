package io.streamstate.core.engine.commit;

import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.hedge.HedgedPublish;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.Storage;

/**
 * Publishes each commit as one changelog, {@code changelog/<version>-<commit id>.changelog}, with
 * create-if-absent: step c2 of docs/protocol.md, "Commit". With a {@link HedgedWriter} that hedges,
 * a create slower than its deadline is raced by the same bytes under the commit's alternate name
 * ({@code -h.changelog}), and the first copy to complete commits the version ("Hedged writes").
 *
 * <p>Also how an async store's uploads ({@link AsyncChangelogPublisher}) and a load's bridge
 * changelogs (protocol a4) are written.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class ChangelogPublisher implements CommitPublisher {
  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final HedgedWriter hedger;

  /**
   * @param hedger hedges changelog writes (shared by the stores of a process); null: plain writes
   */
  public ChangelogPublisher(
      String storeName, Storage storage, StoreLayout layout, HedgedWriter hedger) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.hedger = hedger;
  }

  @Override
  public PublishedCommit publish(EncodedCommit commit) {
    // I2: both names are the commit's own (its id is random), so no other writer ever holds them.
    String file = layout.changelog(commit.version(), commit.commitId());
    try {
      if (hedger != null && hedger.policy().isEnabled()) {
        HedgedPublish published =
            hedger.publish(
                storage,
                file,
                layout.hedgeChangelog(commit.version(), commit.commitId()),
                FramedFile.frame(FileKind.CHANGELOG, commit.payload()));
        return PublishedCommit.changelog(
            commit.framedLength(), published.hedgeFired(), published.hedgeWon());
      }
      storage.create(file, FramedFile.writer(FileKind.CHANGELOG, commit.payload()));
      return PublishedCommit.changelog(commit.framedLength(), false, false);
    } catch (FileAlreadyExistsException e) {
      // Commit ids are random 64-bit numbers: a clash means a broken random source or a store
      // that reports a name taken when it is not. Either way nothing of ours was published.
      throw new RetryableException(
          "Cannot commit version "
              + commit.version()
              + " of store "
              + storeName
              + ": the attempt-unique name "
              + FramedFile.location(storage, file)
              + " is taken",
          e);
    }
  }
}
