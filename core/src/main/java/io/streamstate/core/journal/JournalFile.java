package io.streamstate.core.journal;

import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;

/**
 * One open journal file as its writer knows it (docs/protocol.md, "Segment journal" and "Spark log
 * journal"): the {@link AppendableFile}, what is reserved in it for the {@link RollRule}, the
 * appends in flight, and its lifecycle: it takes appends until it is full or due, or until it is
 * <em>retired</em> (a failed append, a late one, a writer that moves on); once retired it takes no
 * append, and it is closed in the background as soon as no append is in flight.
 *
 * <ul>
 *   <li>Closing waits for the last append in flight, never cuts it: a late append may still be the
 *       copy that wins its hedged write. Retiring never waits for it (it may be stalled on a slow
 *       pipeline): the close is handed to the closer.
 *   <li>A failed append retires its journal: a writer never appends after a failure, so a torn
 *       record can only be a journal's last ({@code SupportsAppend}, "nothing after a failure").
 *   <li>No method waits for the file while holding this object's monitor, so a writer may call any
 *       of them under its own lock while an append is stalled.
 * </ul>
 *
 * <p>Fencing is not here: a journal that a later writer takes over (the Spark log journal's epochs)
 * is fenced by name through {@code SupportsAppend.fence}, which needs no open file; a segment
 * journal is never taken over (each has one writer, under a name no other writer uses, and ends by
 * its close-by time, I13), so it is never fenced.
 *
 * <p>Thread-safe.
 */
public final class JournalFile {

  /** The close-by time of a journal that has none: it ends when its writer moves on. */
  public static final long NO_CLOSE_BY = Long.MAX_VALUE;

  private final AppendableFile file;
  private final long closeByMillis;

  /** The storage, if it takes reports of late writes; else null. */
  private final SupportsLateWriteReports reports;

  /** Runs the close once retired and idle: never the caller's thread. */
  private final Executor closer;

  private final CompletableFuture<Void> closed = new CompletableFuture<>();

  // Guarded by this.
  private long reservedRecords;
  private long reservedBytes;
  private long currentSinceMillis = -1;
  private int inFlight;
  private boolean retired;
  private boolean closing;

  /**
   * Taken although suspected (no unsuspected journal could be made): its rule does not make it due
   * for suspicion, or every append would make a new journal while the suspicion lasts.
   */
  private volatile boolean suspicionAccepted;

  /**
   * @param file the journal, created and started (its header, or whatever its writer begins it
   *     with, already appended)
   * @param startBytes the bytes {@code file} holds so far, counted by the roll rule
   * @param closeByMillis no append starts at or after this time ({@link #NO_CLOSE_BY}: none)
   * @param storage the storage of {@code file}, asked whether it suspects it and told of late
   *     appends
   * @param closer closes it once retired and idle
   */
  public JournalFile(
      AppendableFile file, long startBytes, long closeByMillis, Storage storage, Executor closer) {
    this.file = file;
    this.reservedBytes = startBytes;
    this.closeByMillis = closeByMillis;
    this.reports = storage instanceof SupportsLateWriteReports r ? r : null;
    this.closer = closer;
  }

  /** The file's name in its storage. */
  public String name() {
    return file.name();
  }

  /** No append starts at or after this time ({@link #NO_CLOSE_BY}: none). */
  public long closeByMillis() {
    return closeByMillis;
  }

  /**
   * Records reserved so far: every record an append was started for, and those counted at start.
   */
  public synchronized long reservedRecords() {
    return reservedRecords;
  }

  /**
   * The start's bytes plus every record an append was started for: the roll rule's size, counted
   * here so that no decision waits for the file, which a stalled append holds.
   */
  public synchronized long reservedBytes() {
    return reservedBytes;
  }

  /** When it became its writer's current journal; -1 before. */
  public synchronized long currentSinceMillis() {
    return currentSinceMillis;
  }

  /** Appends in flight (started and not returned). */
  public synchronized int appendsInFlight() {
    return inFlight;
  }

  /** It becomes its writer's current journal at {@code now}: its rule's age counts from here. */
  public synchronized void becameCurrent(long now) {
    currentSinceMillis = now;
  }

  /**
   * Whether it takes an append of {@code recordBytes} at {@code now}: not retired, open for
   * appends, before its close-by time, and not full or due by {@code rule}.
   */
  public synchronized boolean takesAppend(RollRule rule, long recordBytes, long now) {
    return !retired
        && file.isOpen()
        && now < closeByMillis
        && !rule.isFullOrDue(this, recordBytes, now)
        && !(rule.whenSuspectedSlow() && isSuspectedSlow());
  }

  /**
   * For many concurrent appenders: if it {@linkplain #takesAppend takes} the record, reserves it
   * and starts its append (it is not closed until {@link #appendReserved} returns), all at once, so
   * that no other appender nor a failure in between can make it full or closed first.
   *
   * @return false: it takes no append, nothing reserved
   */
  public synchronized boolean tryReserve(RollRule rule, long recordBytes, long now) {
    if (!takesAppend(rule, recordBytes, now)) {
      return false;
    }
    reserve(recordBytes);
    return true;
  }

  /**
   * Reserves one record of {@code recordBytes} and starts its append whatever a roll rule says: the
   * first record of a fresh journal, which goes in alone however large. Follow with {@link
   * #appendReserved}.
   */
  public synchronized void reserve(long recordBytes) {
    reservedRecords++;
    reservedBytes += recordBytes;
    inFlight++;
  }

  /**
   * Appends {@code record}, reserved before ({@link #tryReserve}, {@link #reserve}), durable when
   * this returns; then the append is no longer in flight. A failed append retires the journal.
   *
   * @return the offset at which {@code record} begins
   * @throws RuntimeException as {@link AppendableFile#append}
   */
  public long appendReserved(byte[] record) {
    boolean failed = true;
    try {
      long offset = file.append(record);
      failed = false;
      return offset;
    } finally {
      release(failed);
    }
  }

  /**
   * For a single writer: reserves {@code records} records of {@code bytes} and appends them at once
   * (as {@link #appendReserved}), whatever a roll rule says: the writer asked {@link #takesAppend}.
   */
  public long append(byte[] bytes, long records) {
    synchronized (this) {
      reservedRecords += records;
      reservedBytes += bytes.length;
      inFlight++;
    }
    return appendReserved(bytes);
  }

  private synchronized void release(boolean failed) {
    inFlight--;
    if (failed) {
      retire();
    } else if (retired && inFlight == 0) {
      closeLater();
    }
  }

  /** Whether it is retired (it takes no append any more). */
  public synchronized boolean isRetired() {
    return retired;
  }

  /**
   * Takes no append from now on; closed in the background once no append is in flight. Never waits
   * for an append. Idempotent.
   */
  public synchronized void retire() {
    if (retired) {
      return;
    }
    retired = true;
    if (inFlight == 0) {
      closeLater();
    }
  }

  /**
   * Retires it and closes it now, in the caller's thread, even if an append is in flight (which
   * then fails): for a writer that gives the file up while it appends nothing (a failed take-over
   * or roll) or that dies. Closed when this returns, even if a close in the background was pending.
   */
  public void close() {
    synchronized (this) {
      retired = true;
      closing = true;
    }
    closeFile(); // AppendableFile.close is idempotent
  }

  private void closeLater() {
    if (closing) {
      return;
    }
    closing = true;
    closer.execute(this::closeFile);
  }

  private void closeFile() {
    try {
      file.close();
    } finally {
      closed.complete(null);
    }
  }

  /**
   * Completes once the file is closed, in the thread that closed it: what must follow the close
   * (forgetting it, deleting what it superseded) runs after it.
   */
  public CompletableFuture<Void> closed() {
    return closed;
  }

  /**
   * Its writer takes it although the storage suspects it: its rule no longer retires it for that.
   */
  public void acceptSuspicion() {
    suspicionAccepted = true;
  }

  /**
   * Whether the storage suspects its writes of being slow ({@link
   * SupportsLateWriteReports#isSuspectedSlow}), unless its writer accepted that. A hint: quick,
   * never waits for the store.
   */
  public boolean isSuspectedSlow() {
    return reports != null && !suspicionAccepted && reports.isSuspectedSlow(file.name());
  }

  /** Tells the storage that the append in flight is late ({@link SupportsLateWriteReports}). */
  void reportLateAppend() {
    if (reports != null) {
      reports.reportLateWrite(file.name());
    }
  }

  @Override
  public String toString() {
    return file.name();
  }
}
