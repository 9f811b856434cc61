package io.streamstate.core.engine.segment;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.CommitIds;
import io.streamstate.core.engine.ProcessMetrics;
import io.streamstate.core.engine.ProcessMetrics.Metric;
import io.streamstate.core.error.OutcomeUnknownException;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.format.SegmentJournalFile;
import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.journal.JournalAppendCopy;
import io.streamstate.core.journal.JournalFile;
import io.streamstate.core.journal.RollRule;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsAppend;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.util.HexFormat;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
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
 *       background once its last append returns ({@link JournalFile}; the rule: {@link RollRule}).
 *   <li>A hedged append is reported to the storage as a late write, and a standby that is suspected
 *       then, or still being created, is replaced by a new one, created after the report (on HDFS:
 *       on other DataNodes).
 *   <li>If no journal can be created, the commit is published as a segment file, as without a
 *       journal; a store that cannot append at all disables the journal for good.
 * </ul>
 *
 * <p>Thread-safe. Appends to one journal are serialized by it. Which journal is current, and the
 * standby, are guarded by the writer's lock; a journal's own state by the journal, and no call
 * under the lock waits for an append.
 */
final class SegmentJournalWriter {
  private static final Logger LOG = LoggerFactory.getLogger(SegmentJournalWriter.class);

  private final Storage storage;
  private final SupportsAppend appender;

  /** Creates and closes journals off the commit path (the process's daemon threads). */
  private final Executor background;

  /** Whether the storage takes reports of late writes (then a late append replaces the standby). */
  private final boolean takesReports;

  private final SegmentJournalSettings settings;

  /** j3: full, due, or suspected of being slow. */
  private final RollRule rollRule;

  private final SegmentCatalog catalog;
  private final LongSupplier clock;

  private final Object lock = new Object();
  private JournalFile current; // guarded by lock
  private CompletableFuture<JournalFile> standby; // guarded by lock
  private boolean disabled; // guarded by lock

  private final ProcessMetrics metrics;

  private final AtomicLong appends = new AtomicLong();
  private final AtomicLong journalsCreated = new AtomicLong();

  /**
   * Journals being started (created, header append in flight): what an append hedged before it had
   * a journal reports, since the standby it waits for may be held by a slow pipeline.
   */
  private final Set<String> starting = ConcurrentHashMap.newKeySet();

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
    this.takesReports = storage instanceof SupportsLateWriteReports;
    this.settings = settings;
    this.rollRule =
        RollRule.afterBytesOrMillis(settings.rollBytes(), settings.rollMillis())
            .orWhenSuspectedSlow();
    this.catalog = SegmentCatalog.of(resources, storage);
    this.metrics = ProcessMetrics.of(resources);
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
    JournalFile j = acquire(record.length);
    if (j == null) {
      return null;
    }
    copy.journal = j;
    if (copy.hedged) {
      retire(j); // hedged before it even started: later commits go elsewhere
    }
    long startNanos = System.nanoTime();
    metrics.add(Metric.JOURNAL_APPENDS_IN_FLIGHT, 1);
    long offset;
    try {
      offset = j.appendReserved(record); // a failed append retires j
    } finally {
      metrics.add(Metric.JOURNAL_APPENDS_IN_FLIGHT, -1);
      metrics.addNanos(Metric.JOURNAL_APPEND_TIME_MS, System.nanoTime() - startNanos);
    }
    long now = clock.getAsLong();
    if (now > j.closeByMillis() + settings.graceMillis() / 2) {
      // I13: the sweep may delete the journal from closeBy + grace on: promise no durability.
      throw new OutcomeUnknownException(
          "The append to "
              + where(j)
              + " returned "
              + (now - j.closeByMillis())
              + " ms after its close-by time, too late to be safe from the segment sweep");
    }
    appends.incrementAndGet();
    metrics.add(Metric.JOURNAL_APPENDS, 1);
    metrics.add(Metric.JOURNAL_APPEND_BYTES, record.length);
    return SegmentJournalReader.recordName(j.name(), offset);
  }

  private String where(JournalFile j) {
    return storage.describe() + "/" + j.name();
  }

  /**
   * The journal the record goes to, its append reserved (so it is not closed before the append
   * returns); null if none is available.
   */
  private JournalFile acquire(long recordLength) {
    synchronized (lock) {
      if (disabled) {
        return null;
      }
      JournalFile j = current;
      if (j != null) {
        if (j.tryReserve(rollRule, recordLength, clock.getAsLong())) {
          return j;
        }
        retire(j);
      }
      j = takeStandby();
      if (j == null) {
        return null;
      }
      j.becameCurrent(clock.getAsLong());
      current = j;
      standby = startCreate();
      j.reserve(recordLength); // its first record, however large
      return j;
    }
  }

  /** The standby, created now if there is none or it is too old; null if none can be made. */
  private JournalFile takeStandby() {
    for (int attempt = 0; attempt < 2; attempt++) {
      CompletableFuture<JournalFile> next = standby;
      standby = null;
      if (next == null) {
        next = startCreate();
      }
      JournalFile j;
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
      if (clock.getAsLong() < j.closeByMillis() - settings.rollMillis() / 2) {
        if (!j.isSuspectedSlow()) {
          return j;
        }
        if (attempt > 0) {
          j.acceptSuspicion();
          return j;
        }
      }
      retire(j);
    }
    return null;
  }

  private CompletableFuture<JournalFile> startCreate() {
    return CompletableFuture.supplyAsync(this::create, background);
  }

  private JournalFile create() {
    long now = clock.getAsLong();
    long closeBy = now + 2 * settings.rollMillis();
    String name = SegmentJournalReader.journalName(closeBy, CommitIds.next());
    AppendableFile file = appender.createAppendable(name);
    catalog.journalOpened(name);
    starting.add(name);
    try {
      file.append(SegmentJournalFile.header());
    } catch (RuntimeException e) {
      file.close();
      catalog.journalClosed(name);
      throw e;
    } finally {
      starting.remove(name);
    }
    journalsCreated.incrementAndGet();
    metrics.add(Metric.JOURNALS_CREATED, 1);
    JournalFile journal =
        new JournalFile(file, SegmentJournalFile.HEADER_LENGTH, closeBy, storage, background);
    journal.closed().thenRun(() -> catalog.journalClosed(name));
    return journal;
  }

  /**
   * After a late append to {@code late} (run in the background once its hedge started and the
   * storage has the report): retires it, and replaces the standby if that is suspected now or not
   * created yet (its create may have chosen the same slow DataNodes, or be stuck behind them). The
   * replacement is created after the report, so the storage can place it elsewhere; the old standby
   * is closed once its create returns (an empty journal, swept by time).
   */
  private void moveAwayFrom(JournalFile late) {
    retire(late);
    replaceStandbyIfSuspect("an append to " + late.name() + " is late");
  }

  /**
   * Replaces the standby if it is suspected now or not started yet (its create may have chosen the
   * same slow DataNodes, or be stuck behind them). Called after a late report, so that the storage
   * can place the replacement elsewhere; the old standby is retired once its start returns (an
   * empty journal, swept by time).
   */
  private void replaceStandbyIfSuspect(String why) {
    synchronized (lock) {
      CompletableFuture<JournalFile> old = standby;
      if (old == null || disabled || !takesReports) {
        return;
      }
      if (old.isDone() && !old.isCompletedExceptionally() && !old.join().isSuspectedSlow()) {
        return;
      }
      standby = startCreate();
      old.thenAccept(this::retire);
      LOG.debug("Replacing the standby segment journal under {}: {}", storage.describe(), why);
    }
  }

  /** No commit appends to {@code j} any more; it is closed once its last append returns. */
  private void retire(JournalFile j) {
    synchronized (lock) {
      j.retire();
      if (current == j) {
        current = null;
      }
    }
  }

  /** The journal append as one copy of a hedged publish (the other is a segment file). */
  private final class AppendCopy extends JournalAppendCopy {
    private final long segmentId;
    private final HedgeCopy fallback;
    volatile JournalFile journal;
    volatile boolean hedged;

    AppendCopy(long segmentId, HedgeCopy fallback) {
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
    protected JournalFile journal() {
      return journal;
    }

    /**
     * In the background: moving away needs the writer's lock, which another commit may hold while
     * it waits for a standby journal, and the hedge must not wait.
     */
    @Override
    protected void retire(JournalFile late) {
      background.execute(() -> moveAwayFrom(late));
    }

    /**
     * No journal yet, or the fallback file is being written: the fallback's own late report. An
     * append still waiting for a journal waits for the standby's start, whose header may be held by
     * a slow pipeline (seen after a restart, issue-15 benchmark: the hedge was placed on the same
     * three DataNodes and both copies waited 27 s): the journals being started are reported, so
     * that the hedge's file is placed elsewhere, and the standby is replaced.
     */
    @Override
    protected void hedgeStartedWithoutJournal() {
      if (takesReports && journal == null && !starting.isEmpty()) {
        SupportsLateWriteReports reports = (SupportsLateWriteReports) storage;
        starting.forEach(reports::reportLateWrite);
        background.execute(() -> replaceStandbyIfSuspect("an append waiting for it is late"));
      }
      fallback.hedgeStarted();
    }

    @Override
    public String describe() {
      JournalFile j = journal;
      return (j == null ? storage.describe() + "/" + SegmentCatalog.SEGMENT_DIR : where(j))
          + " (append of segment "
          + HexFormat.of().toHexDigits(segmentId)
          + ")";
    }
  }
}
