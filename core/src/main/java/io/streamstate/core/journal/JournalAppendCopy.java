package io.streamstate.core.journal;

import io.streamstate.core.hedge.HedgeCopy;
import io.streamstate.core.storage.SupportsLateWriteReports;

/**
 * An append to a {@link JournalFile} as the primary copy of a hedged write: the rule both journals
 * (the segment journal of group commits, the Spark log journal) follow when an append is late
 * (docs/protocol.md, "Hedged writes", j5 and w3).
 *
 * <ul>
 *   <li>A record cannot be taken out of a journal: a losing append is never discarded. Its late
 *       duplicate is complete and harmless (readers take the first copy of a record's content), and
 *       the journal's own retention removes it.
 *   <li>When the hedge starts, the late journal is reported to the storage first ({@link
 *       SupportsLateWriteReports}: on HDFS its pipeline's DataNodes become suspect, so the hedge's
 *       file is placed elsewhere), then retired: later appends go to another journal. Retiring must
 *       not wait for the late append, which holds the journal.
 * </ul>
 */
public abstract class JournalAppendCopy implements HedgeCopy {

  /** The journal this append went to; null while none is chosen (no journal yet). */
  protected abstract JournalFile journal();

  /**
   * Moves later appends away from {@code late}, without waiting for its append. By default retires
   * it ({@link JournalFile#retire}: closed once the late append returns).
   */
  protected void retire(JournalFile late) {
    late.retire();
  }

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
    JournalFile late = journal();
    if (late == null) {
      hedgeStartedWithoutJournal();
      return;
    }
    late.reportLateAppend();
    retire(late);
  }
}
