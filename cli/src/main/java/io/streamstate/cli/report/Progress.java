package io.streamstate.cli.report;

import java.io.PrintWriter;

/**
 * A progress bar on standard error, drawn only when it is a terminal ({@code System.console()} is
 * not null): scripts and pipes see nothing of it. Redrawn at most ten times a second, erased when
 * done.
 */
public final class Progress implements AutoCloseable {
  private static final int WIDTH = 30;

  private final PrintWriter err;
  private final boolean enabled;
  private final String what;
  private long total;
  private long done;
  private long lastDrawn;
  private int drawnLength;

  private Progress(PrintWriter err, boolean enabled, String what) {
    this.err = err;
    this.enabled = enabled;
    this.what = what;
  }

  /** A bar for {@code what}, shown on {@code err} if the process has a terminal. */
  public static Progress onTerminal(PrintWriter err, String what) {
    return new Progress(err, System.console() != null, what);
  }

  /** A bar that draws nothing. */
  public static Progress none() {
    return new Progress(null, false, "");
  }

  /** Sets how many steps there are. */
  public synchronized void total(long total) {
    this.total = total;
    draw(false);
  }

  /** One more step done; {@code item} names it. */
  public synchronized void step(String item) {
    done++;
    draw(false);
  }

  private void draw(boolean force) {
    if (!enabled) {
      return;
    }
    long now = System.nanoTime();
    if (!force && now - lastDrawn < 100_000_000L && done < total) {
      return;
    }
    lastDrawn = now;
    int filled = total <= 0 ? 0 : (int) Math.min(WIDTH, done * WIDTH / total);
    String line =
        String.format(
            "\r%s [%s%s] %d/%d",
            what, "#".repeat(filled), " ".repeat(WIDTH - filled), done, Math.max(total, done));
    err.print(line);
    err.flush();
    drawnLength = line.length();
  }

  /** Erases the bar. */
  @Override
  public synchronized void close() {
    if (enabled && drawnLength > 0) {
      err.print("\r" + " ".repeat(drawnLength) + "\r");
      err.flush();
    }
  }
}
