package io.streamstate.bench.spark;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The latency a simulated storage adds to one operation, by operation kind, from a seeded random
 * source. One instance per simulated file system (per profile).
 *
 * <ul>
 *   <li>{@code none}: no latency (the local disk through the same wrapper).
 *   <li>{@code slow-datanode}: metadata is fast; each data write (at close of the stream) is
 *       independently heavy-tailed: most take a few ms, 1% stall for 5-20 s times {@code
 *       stallScale} (short mode uses 0.1: 0.5-2 s).
 *   <li>{@code busy-namenode}: every metadata operation (create, rename, delete, mkdirs, status,
 *       list) costs a base latency times (1 + metadata operations in flight), and global pauses
 *       (every ~15 s on average, 3-10 s times {@code stallScale}) hold every metadata caller until
 *       the pause ends.
 *   <li>{@code s3}: HEAD/GET/LIST/DELETE 10-50 ms, PUT 25-60 ms plus bytes at 80 MB/s, rename =
 *       copy at 30 MB/s plus a delete.
 * </ul>
 */
final class LatencyModel {
  /** Operation kinds, also the counter names. */
  enum Op {
    CREATE,
    WRITE,
    OPEN,
    RENAME,
    DELETE,
    MKDIRS,
    STATUS,
    LIST
  }

  private final String profile;
  private final double stallScale;
  private final SplittableRandom random;
  private final AtomicInteger metadataInFlight = new AtomicInteger();

  /** Pause schedule of busy-namenode, in ms since {@link #origin}: [start, end) pairs. */
  private final long[] pauses;

  private final long origin = System.nanoTime();

  LatencyModel(String profile, long seed, double stallScale) {
    this.profile = profile;
    this.stallScale = stallScale;
    this.random = new SplittableRandom(seed);
    if (profile.equals("busy-namenode")) {
      SplittableRandom pauseRandom = new SplittableRandom(seed * 31 + 7);
      pauses = new long[2 * 2000];
      long t = 0;
      for (int i = 0; i < pauses.length; i += 2) {
        t += (long) (-Math.log(1 - pauseRandom.nextDouble()) * 15_000); // mean gap 15 s
        long duration = (long) ((3_000 + pauseRandom.nextDouble() * 7_000) * stallScale);
        pauses[i] = t;
        pauses[i + 1] = t + duration;
        t += duration;
      }
    } else {
      pauses = new long[0];
    }
    if (!isKnown(profile)) {
      throw new IllegalArgumentException(
          "Unknown simfs profile '" + profile + "' (none, slow-datanode, busy-namenode, s3)");
    }
  }

  static boolean isKnown(String profile) {
    return switch (profile) {
      case "none", "slow-datanode", "busy-namenode", "s3" -> true;
      default -> false;
    };
  }

  private static boolean isMetadata(Op op) {
    return op != Op.WRITE && op != Op.OPEN;
  }

  private synchronized double uniform(double lo, double hi) {
    return lo + random.nextDouble() * (hi - lo);
  }

  private synchronized double chance() {
    return random.nextDouble();
  }

  /**
   * Sleeps for the latency of one operation of kind {@code op} touching {@code bytes} bytes.
   *
   * @return the injected delay in ms
   */
  long delay(Op op, long bytes) throws InterruptedException {
    long start = System.nanoTime();
    switch (profile) {
      case "slow-datanode" -> {
        if (op == Op.WRITE) {
          double ms = chance() < 0.01 ? uniform(5_000, 20_000) * stallScale : uniform(2, 12);
          sleepMs(ms + bytes / 200_000.0); // 200 MB/s pipeline
        } else {
          sleepMs(uniform(0.3, 2));
        }
      }
      case "busy-namenode" -> {
        if (isMetadata(op)) {
          int load = metadataInFlight.incrementAndGet();
          try {
            waitForPause();
            sleepMs(uniform(2, 6) * load);
          } finally {
            metadataInFlight.decrementAndGet();
          }
        } else {
          sleepMs(uniform(1, 4) + bytes / 200_000.0);
        }
      }
      case "s3" -> {
        switch (op) {
          case WRITE -> sleepMs(uniform(25, 60) + bytes / 80_000.0); // PUT, 80 MB/s
          case OPEN -> sleepMs(uniform(15, 40) + bytes / 80_000.0); // GET
          case LIST -> sleepMs(uniform(20, 50));
          case RENAME -> sleepMs(uniform(30, 60) + bytes / 30_000.0 + uniform(15, 30)); // copy+del
          case CREATE, STATUS, MKDIRS, DELETE -> sleepMs(uniform(10, 30)); // HEAD / marker ops
          default -> {}
        }
      }
      default -> {}
    }
    return TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
  }

  private void waitForPause() throws InterruptedException {
    long now = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - origin);
    for (int i = 0; i < pauses.length; i += 2) {
      if (now < pauses[i]) {
        return;
      }
      if (now < pauses[i + 1]) {
        Thread.sleep(pauses[i + 1] - now);
        return;
      }
    }
  }

  private static void sleepMs(double ms) throws InterruptedException {
    if (ms <= 0) {
      return;
    }
    long nanos = (long) (ms * 1_000_000);
    Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
  }
}
