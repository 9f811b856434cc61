package io.streamstate.core.engine.segment;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CommitIds;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.format.SegmentJournalFile;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.hedge.JournalAppendCopy;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Appends one {@link GroupCommitter}'s segments to a journal file instead of publishing a file each
 * (docs/protocol.md, "Segment journal"), so that a commit costs no file-system metadata request: on
 * HDFS an {@code hsync} goes to the DataNodes only, where a new file costs the NameNode a create, a
 * block allocation and a close.
 *
 * <ul>
 *   <li>One journal takes appends at a time, for at most {@code rollMillis} after it starts to and
 *       up to {@code rollBytes}; it is named with a close-by time (its creation plus twice {@code
 *       rollMillis}) after which no append starts.
 *   <li>The next journal (the standby) is created in the background as soon as one becomes current,
 *       so a switch does not wait for a create on the commit path.
 *   <li>A journal is retired when it is full or due, after a failed append (a writer never appends
 *       after a failure, so a torn record can only be a journal's last), when an append to it is
 *       hedged (its pipeline is slow: later commits go to the standby), and when the storage
 *       suspects it of being slow ({@link SupportsLateWriteReports#isSuspectedSlow}: on HDFS its
 *       pipeline holds a DataNode a late write went through). A retired journal is closed in the
 *       background once its last append returns.
 *   <li>A hedged append is reported to the storage as a late write, and a standby that is suspected
 *       then, or still being created, is replaced by a new one, created after the report (on HDFS:
 *       on other DataNodes).
 *   <li>If no journal can be created, the commit is published as a segment file, as without a
 *       journal; a store that cannot append at all disables the journal for good.
 * </ul>
 *
 * <p>Thread-safe. Appends to one journal are serialized by it.
 */
final class SegmentJournalWriter {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentJournalWriter.class);

  private final Storage storage;
  private final SupportsAppend appender;

  /** Creates and closes journals off the commit path (the process's daemon threads). */
  private final Executor background;

  /** The storage, if it takes reports of late writes; else null. */
  private final SupportsLateWriteReports reports;

  private final SegmentJournalSettings settings;
  private final SegmentCatalog catalog;
  private final LongSupplier clock;

  private final Object lock = new Object();
  private Journal current; // guarded by lock
  private CompletableFuture<Journal> standby; // guarded by lock
  private boolean disabled; // guarded by lock

  private final AtomicLong appends = new AtomicLong();
  private final AtomicLong journalsCreated = new AtomicLong();

  /** One journal file and its state; all mutable fields guarded by the writer's lock. */
  private static final class Journal {
    final AppendableFile file;
    final long createdMillis;
    final long closeByMillis;
    long currentSinceMillis = -1;
    boolean retired;

    /**
     * Taken although suspected (no unsuspected journal could be made): not retired for suspicion,
     * or every commit would make a new journal while the suspicion lasts.
     */
    boolean suspicionAccepted;

    int inFlight;

    /**
     * The header plus every record an append was started for: the roll rule's size, kept here so
     * that no decision under the writer's lock waits for the file, which a stalled append holds.
     */
    long reservedBytes;

    Journal(AppendableFile file, long createdMillis, long closeByMillis, long headerBytes) {
      this.file = file;
      this.createdMillis = createdMillis;
      this.closeByMillis = closeByMillis;
      this.reservedBytes = headerBytes;
    }
  }

  SegmentJournalWriter(
      ProcessResources resources,
      Storage storage,
      SegmentJournalSettings settings,
      LongSupplier clock) {
    if (!canAppend(storage)) {
      throw new IllegalArgumentException(storage.describe() + " cannot append");
    }
    this.storage = storage;
    this.appender = (SupportsAppend) storage;
    this.reports = storage instanceof SupportsLateWriteReports r ? r : null;
    this.settings = settings;
    this.catalog = SegmentCatalog.of(resources, storage);
    this.background = resources.cachedPool("journal");
    this.clock = clock;
    synchronized (lock) {
      standby = startCreate(); // the first journal, before the first commit needs it
    }
  }

  static boolean canAppend(Storage storage) {
    return storage instanceof SupportsAppend a && a.appendSupported();
  }

  /** Segments appended so far. */
  long appends() {
    return appends.get();
  }

  /** Journal files created so far. */
  long journalsCreated() {
    return journalsCreated.get();
  }

  /**
   * A hedge copy that appends the segment {@code segmentId} to the current journal, or, if no
   * journal is available, writes {@code fallback} instead.
   */
  HedgeCopy copy(long segmentId, HedgeCopy fallback) {
    return new AppendCopy(segmentId, fallback);
  }

  /**
   * Appends the framed segment {@code segmentId} to the current journal and returns its record's
   * name, or null if no journal is available (the copy then writes its fallback file).
   *
   * @throws OutcomeUnknownException the append failed, or returned too late to be safe from the
   *     sweep; the record may be in the journal
   */
  private String append(long segmentId, byte[] framedSegment, AppendCopy copy) {
    byte[] record = SegmentJournalFile.record(segmentId, framedSegment);
    Journal j = acquire(record.length);
    if (j == null) {
      return null;
    }
    copy.journal = j;
    if (copy.hedged) {
      retire(j); // hedged before it even started: later commits go elsewhere
    }
    boolean failed = true;
    try {
      long offset = j.file.append(record);
      failed = false;
      long now = clock.getAsLong();
      if (now > j.closeByMillis + settings.graceMillis() / 2) {
        // I13: the sweep may delete the journal from closeBy + grace on: promise no durability.
        throw new OutcomeUnknownException(
            "The append to "
                + where(j)
                + " returned "
                + (now - j.closeByMillis)
                + " ms after its close-by time, too late to be safe from the segment sweep");
      }
      appends.incrementAndGet();
      return SegmentJournalReader.recordName(j.file.name(), offset);
    } finally {
      release(j, failed);
    }
  }

  private String where(Journal j) {
    return storage.describe() + "/" + j.file.name();
  }

  private Journal acquire(long recordLength) {
    synchronized (lock) {
      if (disabled) {
        return null;
      }
      long now = clock.getAsLong();
      Journal j = current;
      if (j != null && (!takesAppend(j, recordLength, now) || suspectedSlow(j))) {
        retire(j);
        j = null;
      }
      if (j == null) {
        j = takeStandby();
        if (j == null) {
          return null;
        }
        j.currentSinceMillis = clock.getAsLong();
        current = j;
        standby = startCreate();
      }
      j.inFlight++;
      j.reservedBytes += recordLength;
      return j;
    }
  }

  private boolean takesAppend(Journal j, long recordLength, long now) {
    long length = j.reservedBytes;
    return !j.retired
        && j.file.isOpen()
        && now < j.closeByMillis
        && now < j.currentSinceMillis + settings.rollMillis()
        && (length <= SegmentJournalFile.HEADER_LENGTH
            || length + recordLength <= settings.rollBytes());
  }

  /** The standby, created now if there is none or it is too old; null if none can be made. */
  private Journal takeStandby() {
    for (int attempt = 0; attempt < 2; attempt++) {
      CompletableFuture<Journal> next = standby;
      standby = null;
      if (next == null) {
        next = startCreate();
      }
      Journal j;
      try {
        j = next.join();
      } catch (CompletionException e) {
        Throwable cause = e.getCause() == null ? e : e.getCause();
        if (cause instanceof UnsupportedException) {
          disabled = true;
          LOG.warn(
              "{} cannot append ({}); group commits are published as segment files",
              storage.describe(),
              cause.getMessage());
        } else {
          LOG.warn(
              "Cannot create a segment journal under {}; publishing this group commit as a"
                  + " segment file",
              storage.describe(),
              cause);
        }
        return null;
      }
      // A standby that waited long (no commits) may have too little time left: make another. One
      // that is suspected of being slow too, but only once: the second is made now, as far from
      // the suspects as the storage can place it, and taken as it is.
      if (clock.getAsLong() < j.closeByMillis - settings.rollMillis() / 2) {
        if (!suspectedSlow(j)) {
          return j;
        }
        if (attempt > 0) {
          j.suspicionAccepted = true;
          return j;
        }
      }
      retire(j);
    }
    return null;
  }

  private CompletableFuture<Journal> startCreate() {
    return CompletableFuture.supplyAsync(this::create, background);
  }

  private Journal create() {
    long now = clock.getAsLong();
    long closeBy = now + 2 * settings.rollMillis();
    String name = SegmentJournalReader.journalName(closeBy, CommitIds.next());
    AppendableFile file = appender.createAppendable(name);
    catalog.journalOpened(name);
    try {
      file.append(SegmentJournalFile.header());
    } catch (RuntimeException e) {
      file.close();
      catalog.journalClosed(name);
      throw e;
    }
    journalsCreated.incrementAndGet();
    return new Journal(file, now, closeBy, SegmentJournalFile.HEADER_LENGTH);
  }

  /** Whether the storage suspects {@code j}'s writes of being slow (and that was not accepted). */
  private boolean suspectedSlow(Journal j) {
    return reports != null && !j.suspicionAccepted && reports.isSuspectedSlow(j.file.name());
  }

  /**
   * After a late append to {@code late} (run in the background once its hedge started and the
   * storage has the report): retires it, and replaces the standby if that is suspected now or not
   * created yet (its create may have chosen the same slow DataNodes, or be stuck behind them). The
   * replacement is created after the report, so the storage can place it elsewhere; the old standby
   * is closed once its create returns (an empty journal, swept by time).
   */
  private void moveAwayFrom(Journal late) {
    retire(late);
    synchronized (lock) {
      CompletableFuture<Journal> old = standby;
      if (old == null || disabled || reports == null) {
        return;
      }
      if (old.isDone() && !old.isCompletedExceptionally() && !suspectedSlow(old.join())) {
        return;
      }
      standby = startCreate();
      old.thenAccept(this::retire);
      LOG.debug(
          "Replacing the standby segment journal under {}: an append to {} is late",
          storage.describe(),
          late.file.name());
    }
  }

  private void retire(Journal j) {
    synchronized (lock) {
      if (j.retired) {
        return;
      }
      j.retired = true;
      if (current == j) {
        current = null;
      }
      if (j.inFlight == 0) {
        closeLater(j);
      }
    }
  }

  private void release(Journal j, boolean failed) {
    synchronized (lock) {
      j.inFlight--;
      if (failed) {
        retire(j);
      } else if (j.retired && j.inFlight == 0) {
        closeLater(j);
      }
    }
  }

  private void closeLater(Journal j) {
    background.execute(
        () -> {
          j.file.close();
          catalog.journalClosed(j.file.name());
        });
  }

  /** The journal append as one copy of a hedged publish (the other is a segment file). */
  private final class AppendCopy extends JournalAppendCopy<Journal> {
    private final long segmentId;
    private final HedgeCopy fallback;
    volatile Journal journal;
    volatile boolean hedged;

    AppendCopy(long segmentId, HedgeCopy fallback) {
      super(storage);
      this.segmentId = segmentId;
      this.fallback = fallback;
    }

    @Override
    public String write(byte[] content) {
      String name = append(segmentId, content, this);
      return name != null ? name : fallback.write(content);
    }

    /** A record is never discarded (left for the sweep); a fallback segment file may be. */
    @Override
    public boolean discard(String name) {
      return !SegmentJournalReader.isRecord(name) && fallback.discard(name);
    }

    @Override
    protected void hedgeStarting() {
      hedged = true;
    }

    @Override
    protected Journal journal() {
      return journal;
    }

    @Override
    protected AppendableFile fileOf(Journal j) {
      return j.file;
    }

    /**
     * In the background: moving away needs the writer's lock, which another commit may hold while
     * it waits for a standby journal, and the hedge must not wait.
     */
    @Override
    protected void retire(Journal late) {
      background.execute(() -> moveAwayFrom(late));
    }

    /** No journal yet, or the fallback file is being written: the fallback's own late report. */
    @Override
    protected void hedgeStartedWithoutJournal() {
      fallback.hedgeStarted();
    }

    @Override
    public String describe() {
      Journal j = journal;
      return (j == null ? storage.describe() + "/" + SegmentCatalog.SEGMENT_DIR : where(j))
          + " (append of segment "
          + HexFormat.of().toHexDigits(segmentId)
          + ")";
    }
  }
}
