package io.streamstate.cli.verify;

/**
 * One thing {@code verify} found: a file (or a log's batch) that is damaged, or worth a note, what
 * is wrong, and what recovery would do about it.
 *
 * @param file the file's location (or the log directory and batch)
 * @param problem what is wrong with it
 * @param recovery what a restart of the query would do about it
 * @param target the file as {@code repair} may act on it, or null: set only where verification's
 *     own classification says what the file is to a restart (the one place that decides it)
 */
public record Finding(
    Severity severity, String file, String problem, String recovery, Target target) {
  /** How bad it is. */
  public enum Severity {
    /** A file that does not verify, is missing, or a log that is not whole: exit code 1. */
    DAMAGED,
    /** Worth knowing, harmless to recovery (a journal's incomplete last record, say). */
    NOTE
  }

  /** A finding about no file {@code repair} could act on. */
  public Finding(Severity severity, String file, String problem, String recovery) {
    this(severity, file, problem, recovery, null);
  }

  /** What a file is to a restart, as far as {@code repair} needs to know. */
  public enum Kind {
    /**
     * The newest entry of the offset or commit log, a plain file {@code N} (no journal record, no
     * hedge copy stands in for it), torn or unparseable: a restart fails reading it.
     */
    LAST_LOG_ENTRY,
    /**
     * A changelog of our store that does not verify and that no restart reads (newer than the
     * version a restart loads, another commit than the lineage's, off the lineage, below its base,
     * or a copy whose other copy the lineage reads).
     */
    UNREAD_CHANGELOG,
    /** A log entry's hedge copy holding the same bytes as the whole entry {@code N}. */
    HEDGE_COPY_SAME_AS_ENTRY,
    /**
     * A log entry's hedge copy no reader takes: torn, shorter than its whole entry {@code N}, or
     * the copy of no live entry.
     */
    HEDGE_COPY_UNREAD
  }

  /**
   * The file a finding is about, for {@code repair}.
   *
   * @param path the file's path relative to the checkpoint's root ({@code offsets/3}, {@code
   *     state/0/1/changelog/...})
   * @param modifiedMillis its modification time (0 when not listed)
   */
  public record Target(Kind kind, String path, long modifiedMillis) {}
}
