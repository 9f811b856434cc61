package io.streamstate.core.engine.segment;

/**
 * How a {@link GroupCommitter} appends its segments to a journal instead of publishing a file each
 * (docs/protocol.md, "Segment journal").
 *
 * @param rollBytes a journal takes no append that would grow it past this many bytes (default 128
 *     MiB, one HDFS block); a larger segment goes alone into a journal of its own
 * @param rollMillis a journal takes appends for this long after it is created (default 10 min), and
 *     its name says until when, so that the sweep, in any process, knows when no writer can still
 *     append to it
 * @param graceMillis an append that completes later than half of this after the journal's close-by
 *     time is reported as an unknown outcome, since the sweep may delete the journal once this has
 *     passed after that time (default 120 s, the torn-file grace period)
 */
public record SegmentJournalSettings(long rollBytes, long rollMillis, long graceMillis) {
  public SegmentJournalSettings {
    if (rollBytes < 1024 || rollMillis < 1 || graceMillis < 0) {
      throw new IllegalArgumentException(
          "rollBytes must be >= 1024, rollMillis >= 1, graceMillis >= 0: "
              + rollBytes
              + ", "
              + rollMillis
              + ", "
              + graceMillis);
    }
  }

  public static SegmentJournalSettings defaults() {
    return new SegmentJournalSettings(128L << 20, 600_000, 120_000);
  }
}
