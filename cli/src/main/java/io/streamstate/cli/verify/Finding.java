package io.streamstate.cli.verify;

/**
 * One thing {@code verify} found: a file (or a log's batch) that is damaged, or worth a note, what
 * is wrong, and what recovery would do about it.
 *
 * @param file the file's location (or the log directory and batch)
 * @param problem what is wrong with it
 * @param recovery what a restart of the query would do about it
 */
public record Finding(Severity severity, String file, String problem, String recovery) {
  /** How bad it is. */
  public enum Severity {
    /** A file that does not verify, is missing, or a log that is not whole: exit code 1. */
    DAMAGED,
    /** Worth knowing, harmless to recovery (a journal's incomplete last record, say). */
    NOTE
  }
}
