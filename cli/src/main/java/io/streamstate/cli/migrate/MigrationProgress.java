package io.streamstate.cli.migrate;

import io.streamstate.cli.report.Sizes;
import java.io.PrintWriter;

/**
 * The progress of a migration on standard error: files done of all, bytes, rate and time left. On a
 * terminal a line redrawn in place at most ten times a second; elsewhere (a log, a pipe) a line
 * every {@link #LINE_INTERVAL_NANOS}; in both, a last line when done.
 */
public final class MigrationProgress {
  private static final long LINE_INTERVAL_NANOS = 10_000_000_000L;

  private final PrintWriter err;
  private final boolean terminal;
  private final int files;
  private final long bytes;
  private final long start = System.nanoTime();
  private int filesDone;
  private long bytesDone;
  private long lastDrawn = start;
  private int drawnLength;

  /**
   * @param terminal whether {@code err} is a terminal (a line redrawn in place)
   * @param files how many files the migration copies
   * @param bytes how many bytes they hold
   */
  public MigrationProgress(PrintWriter err, boolean terminal, int files, long bytes) {
    this.err = err;
    this.terminal = terminal;
    this.files = files;
    this.bytes = bytes;
  }

  /** One more file done, of {@code length} bytes. */
  synchronized void fileDone(long length) {
    filesDone++;
    bytesDone += length;
    long now = System.nanoTime();
    if (now - lastDrawn >= (terminal ? 100_000_000L : LINE_INTERVAL_NANOS)) {
      lastDrawn = now;
      print(line(now));
    }
  }

  /** The last line (replacing the terminal's). */
  synchronized void finish() {
    print(line(System.nanoTime()));
    if (terminal) {
      err.println();
      err.flush();
    }
  }

  /** "migrating: 23/57 files, 512.0 KiB/1.2 MiB, 3.4 MiB/s, 1 s left". */
  private String line(long now) {
    double seconds = Math.max(1e-3, (now - start) / 1e9);
    double rate = bytesDone / seconds;
    String left =
        filesDone >= files
            ? "done in " + Sizes.millis((now - start) / 1_000_000)
            : rate <= 0 ? "time left unknown" : eta((bytes - bytesDone) / rate) + " left";
    return String.format(
        "migrating: %d/%d files, %s/%s, %s/s, %s",
        filesDone,
        files,
        Sizes.bytes(bytesDone),
        Sizes.bytes(bytes),
        Sizes.bytes((long) rate),
        left);
  }

  private static String eta(double seconds) {
    long s = (long) Math.ceil(seconds);
    return s < 60
        ? s + " s"
        : s < 3600
            ? (s / 60) + " min " + (s % 60) + " s"
            : (s / 3600) + " h " + (s % 3600 / 60) + " min";
  }

  private void print(String line) {
    if (terminal) {
      String padded = line + " ".repeat(Math.max(0, drawnLength - line.length()));
      err.print("\r" + padded);
      drawnLength = line.length();
    } else {
      err.println(line);
    }
    err.flush();
  }
}
