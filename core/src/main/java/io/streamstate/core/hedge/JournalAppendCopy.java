package io.streamstate.core.hedge;

import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.SupportsLateWriteReports;

/**
 * An append to a journal as the primary copy of a hedged write: the rule both journals (the segment
 * journal of group commits, the Spark log journal) follow when an append is late (docs/protocol.md,
 * "Hedged writes", j5 and w5).
 *
 * <ul>
 *   <li>A record cannot be taken out of a journal: a losing append is never discarded. Its late
 *       duplicate is complete and harmless (readers take the first copy of a record's content), and
 *       the journal's own retention removes it.
 *   <li>When the hedge starts, the late journal is reported to the storage first (on HDFS its
 *       pipeline's DataNodes become suspect, so the hedge's file is placed elsewhere), then
 *       retired: later appends go to another journal. Retiring must not wait for the late append,
 *       which holds the journal.
 * </ul>
 *
 * @param <J> the journal as its writer knows it
 */
public abstract class JournalAppendCopy<J> implements HedgeCopy {
  private final Storage storage;

  protected JournalAppendCopy(Storage storage) {
    this.storage = storage;
  }

  /** The journal this append went to; null while none is chosen (no journal yet). */
  protected abstract J journal();

  /** The file of {@code journal}. */
  protected abstract AppendableFile fileOf(J journal);

  /** Moves later appends away from {@code late}, without waiting for its append. */
  protected abstract void retire(J late);

  /**
   * Called first when the hedge starts, before the journal is looked at: a writer that chooses the
   * journal concurrently learns here that its append is late. By default nothing.
   */
  protected void hedgeStarting() {}

  /** The hedge started before a journal was chosen; by default nothing to do. */
  protected void hedgeStartedWithoutJournal() {}

  /** A record cannot be taken out of a journal: never discarded. */
  @Override
  public boolean discard(String written) {
    return false;
  }

  @Override
  public final void hedgeStarted() {
    hedgeStarting();
    J late = journal();
    if (late == null) {
      hedgeStartedWithoutJournal();
      return;
    }
    if (storage instanceof SupportsLateWriteReports reports) {
      reports.reportLateWrite(fileOf(late).name());
    }
    retire(late);
  }
}
