package io.streamstate.core.journal;

/**
 * When a journal is full or due and its writer must continue in another (docs/protocol.md, j3 and
 * w5): after so many records, past so many bytes, so long after it became current, or when the
 * storage suspects it of being slow. What stops every journal whatever its rule (retired, closed
 * for appends, past its close-by time) is {@link JournalFile#takesAppend}'s.
 *
 * @param maxRecords due once this many records are reserved ({@link #UNBOUNDED}: never)
 * @param maxBytes due before a record that would grow the journal past this; a journal with no
 *     record yet takes one of any size, so a larger record goes alone into a fresh journal
 * @param maxCurrentMillis due this long after the journal became current ({@link
 *     JournalFile#becameCurrent}); a journal never made current does not age
 * @param whenSuspectedSlow due while the storage suspects the journal's writes of being slow,
 *     unless its writer accepted that ({@link JournalFile#acceptSuspicion})
 */
public record RollRule(
    long maxRecords, long maxBytes, long maxCurrentMillis, boolean whenSuspectedSlow) {

  /** No limit of that kind. */
  public static final long UNBOUNDED = Long.MAX_VALUE;

  public RollRule {
    if (maxRecords < 1 || maxBytes < 1 || maxCurrentMillis < 1) {
      throw new IllegalArgumentException(
          "maxRecords, maxBytes and maxCurrentMillis must be >= 1: "
              + maxRecords
              + ", "
              + maxBytes
              + ", "
              + maxCurrentMillis);
    }
  }

  /** Due after {@code maxRecords} records, nothing else (the Spark log journal's rule). */
  public static RollRule afterRecords(long maxRecords) {
    return new RollRule(maxRecords, UNBOUNDED, UNBOUNDED, false);
  }

  /**
   * Due past {@code maxBytes} or {@code maxCurrentMillis} after it became current, whichever comes
   * first (the segment journal's rule, with {@link #orWhenSuspectedSlow}).
   */
  public static RollRule afterBytesOrMillis(long maxBytes, long maxCurrentMillis) {
    return new RollRule(UNBOUNDED, maxBytes, maxCurrentMillis, false);
  }

  /** This rule, and due as well while the storage suspects the journal of being slow. */
  public RollRule orWhenSuspectedSlow() {
    return new RollRule(maxRecords, maxBytes, maxCurrentMillis, true);
  }

  /**
   * Whether {@code journal} is full or due before a record of {@code recordBytes}, at {@code now};
   * suspicion is not looked at here (a call to the storage: {@link JournalFile#takesAppend} makes
   * it, last).
   */
  boolean isFullOrDue(JournalFile journal, long recordBytes, long now) {
    long records = journal.reservedRecords();
    if (records >= maxRecords) {
      return true;
    }
    if (records > 0 && recordBytes > maxBytes - journal.reservedBytes()) {
      return true;
    }
    long since = journal.currentSinceMillis();
    return maxCurrentMillis != UNBOUNDED && since >= 0 && now - since >= maxCurrentMillis;
  }
}
