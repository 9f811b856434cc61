package io.streamstate.cli;

/** The command's exit codes (docs/cli.md, "Exit codes"). */
public final class ExitCodes {
  /** Done; for {@code verify}: nothing damaged. */
  public static final int OK = 0;

  /**
   * {@code verify}: something is damaged (each damaged file named). {@code export-logs}: refused (a
   * live writer holds the journal, an entry it may not overwrite), or an entry left as it is that
   * Spark's own manager cannot read.
   */
  public static final int DAMAGED = 1;

  /**
   * Usage: unknown option or command, missing argument, a location that does not exist or is not a
   * Spark streaming checkpoint, a store the command cannot use (no file system for the scheme, no
   * create-if-absent).
   */
  public static final int USAGE = 2;

  /**
   * The checkpoint could not be read: an I/O error, permissions, credentials, an unreachable store.
   * Nothing was concluded about the checkpoint.
   */
  public static final int UNREADABLE = 3;

  private ExitCodes() {}
}
