package io.streamstate.cli.report;

/** Sizes and durations as people read them. */
public final class Sizes {
  private Sizes() {}

  /** {@code 512 B}, {@code 15.1 KiB}, {@code 3.2 MiB}, {@code 1.0 GiB}. */
  public static String bytes(long n) {
    if (n < 1024) {
      return n + " B";
    }
    String[] units = {"KiB", "MiB", "GiB", "TiB"};
    double v = n;
    int u = -1;
    while (v >= 1024 && u < units.length - 1) {
      v /= 1024;
      u++;
    }
    return String.format(java.util.Locale.ROOT, "%.1f %s", v, units[u]);
  }

  /** {@code 850 ms}, {@code 2.4 s}, {@code 3 min 12 s}. */
  public static String millis(long ms) {
    if (ms < 1000) {
      return ms + " ms";
    }
    if (ms < 60_000) {
      return String.format(java.util.Locale.ROOT, "%.1f s", ms / 1000.0);
    }
    return (ms / 60_000) + " min " + (ms % 60_000) / 1000 + " s";
  }
}
