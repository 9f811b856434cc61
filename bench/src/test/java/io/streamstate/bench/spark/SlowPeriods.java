package io.streamstate.bench.spark;

/** Test help for {@link DataNodeCluster}'s slow periods. */
final class SlowPeriods {
  private SlowPeriods() {}

  /** An instant when exactly one DataNode is slow: {time, slow DataNode, end of its period}. */
  static long[] instantWithOneSlowDataNode(DataNodeCluster c) {
    return instantWithOneSlowDataNode(c, 0);
  }

  /**
   * An instant when exactly one DataNode is slow, at least {@code marginMs} before its period ends
   * (and no other period ends within the margin): {time, slow DataNode, end of its period}.
   */
  static long[] instantWithOneSlowDataNode(DataNodeCluster c, long marginMs) {
    for (long t = 0; ; t += 100) {
      int slow = -1;
      int n = 0;
      for (int node = 0; node < c.size(); node++) {
        if (c.slowUntilMs(node, t) > t + marginMs) {
          slow = node;
          n++;
        } else if (c.slowUntilMs(node, t) > t) {
          n += 2; // about to end: not this instant
        }
      }
      if (n == 1) {
        return new long[] {t, slow, c.slowUntilMs(slow, t)};
      }
    }
  }
}
