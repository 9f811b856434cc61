package io.streamstate.core.engine.commit;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.StoreLayout;
import io.streamstate.core.error.CorruptFileException;
import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.error.MissingFileException;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.RetryableException;
import io.streamstate.core.format.FileKind;
import io.streamstate.core.format.FramedFile;
import io.streamstate.core.storage.Storage;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Async durability (docs/protocol.md, "Durability modes", a1-a3): a commit is queued and returns;
 * {@link AsyncUploads} publishes the queued changelogs in version order in the background, each as
 * {@link ChangelogPublisher} would, under the same attempt-unique names. A retry after an unknown
 * outcome or a taken name first reads back both names the commit may have used, and else writes the
 * alternate name. What the background uploads write is counted by {@code counter}.
 *
 * @apiNote Internal: public for the engine's packages only.
 */
public final class AsyncChangelogPublisher implements CommitPublisher {
  private static final Logger LOG = LoggerFactory.getLogger(AsyncChangelogPublisher.class);

  /** How long {@link #close()} waits for pending uploads, and a load for another instance's. */
  private static final long FLUSH_MILLIS = 30_000;

  /**
   * Async stores of a process by durable location (a component of its {@link ProcessResources}), so
   * that a new instance of a store (a restarted query, a partition moved back) first lets an older
   * instance's pending uploads land instead of resuming from an older version while they are still
   * on their way.
   */
  private static final class ByLocation {
    final ConcurrentMap<String, AsyncUploads> uploads = new ConcurrentHashMap<>();
  }

  private final ConcurrentMap<String, AsyncUploads> byLocation;

  private final String storeName;
  private final Storage storage;
  private final StoreLayout layout;
  private final ChangelogPublisher changelogs;
  private final Consumer<PublishedCommit> counter;
  private final String location;
  private final AsyncUploads uploads;

  /**
   * @param maxLag the most versions not yet durable ({@code asyncMaxLagVersions})
   * @param counter counts what each background upload wrote (the store's metrics)
   * @param resources the process's: its pool runs the uploads, its registry finds other instances
   */
  public AsyncChangelogPublisher(
      ProcessResources resources,
      String storeName,
      Storage storage,
      StoreLayout layout,
      int maxLag,
      ChangelogPublisher changelogs,
      Consumer<PublishedCommit> counter) {
    this.storeName = storeName;
    this.storage = storage;
    this.layout = layout;
    this.changelogs = changelogs;
    this.counter = counter;
    this.location = FramedFile.location(storage, layout.prefix());
    this.byLocation = resources.component(ByLocation.class, ByLocation::new).uploads;
    this.uploads =
        new AsyncUploads(storeName, maxLag, this::upload, resources.cachedPool("async-upload"));
  }

  /**
   * {versions pending summed over the async stores of {@code resources}'s process, the most pending
   * at one store}: how far async durability is behind, for metrics.
   */
  public static long[] pendingUploads(ProcessResources resources) {
    ByLocation all = resources.componentIfPresent(ByLocation.class);
    long sum = 0;
    long max = 0;
    if (all != null) {
      for (AsyncUploads u : all.uploads.values()) {
        int pending = u.pending();
        sum += pending;
        max = Math.max(max, pending);
      }
    }
    return new long[] {sum, max};
  }

  /** a1: queues the upload (waiting while the lag is at its maximum). */
  @Override
  public PublishedCommit publish(EncodedCommit commit) {
    byLocation.put(location, uploads);
    uploads.submit(commit);
    return PublishedCommit.queued(commit.framedLength());
  }

  @Override
  public int pending() {
    return uploads.pending();
  }

  /**
   * a4, before a load resumes from an older durable version: if another instance of this store in
   * this process still has uploads pending, waits up to 30 s for them to land. Returns whether it
   * waited (the load then looks again).
   */
  public boolean awaitOtherInstance() {
    AsyncUploads older = byLocation.get(location);
    if (older == null || older == uploads || older.pending() == 0) {
      return false;
    }
    older.awaitDrained(FLUSH_MILLIS);
    return true;
  }

  /** a3: waits up to 30 s for pending uploads; logs the versions still pending then. */
  @Override
  public void close() {
    List<Long> lost = uploads.close(FLUSH_MILLIS);
    byLocation.remove(location, uploads);
    if (!lost.isEmpty()) {
      LOG.warn(
          "Store {}: closing with versions {} committed but not uploaded (async durability);"
              + " they are lost unless this process uploads them later",
          storeName,
          lost);
    }
  }

  /** a2: uploads one changelog; a retry reads back what an earlier try may have published. */
  private void upload(EncodedCommit commit) {
    try {
      counter.accept(changelogs.publish(commit));
      return;
    } catch (OutcomeUnknownException | RetryableException e) {
      if (e instanceof RetryableException
          && !(e.getCause() instanceof FileAlreadyExistsException)) {
        throw e; // nothing published: the uploader retries
      }
    }
    // I11: an earlier try may have published it: read both names back, delete nothing.
    String primary = layout.changelog(commit.version(), commit.commitId());
    String alternate = layout.hedgeChangelog(commit.version(), commit.commitId());
    for (String file : List.of(primary, alternate)) {
      try {
        if (Arrays.equals(
            FramedFile.readPayload(storage, file, FileKind.CHANGELOG), commit.payload())) {
          return; // an earlier try did publish it
        }
      } catch (CorruptFileException | MissingFileException absent) {
        // not there whole: try the next name
      }
    }
    try {
      storage.create(alternate, FramedFile.writer(FileKind.CHANGELOG, commit.payload()));
      // Counted as before the engine's split: the file, not its bytes (an undercount of
      // bytesWritten on this rare path, kept so that the split changes no counter).
      counter.accept(new PublishedCommit(commit.framedLength(), 1, 0, false, false, false, false));
    } catch (FileAlreadyExistsException taken) {
      throw new RetryableException(
          "Store "
              + storeName
              + ": both names of version "
              + commit.version()
              + " hold incomplete copies ("
              + FramedFile.location(storage, primary)
              + "); retrying",
          taken);
    }
  }
}
