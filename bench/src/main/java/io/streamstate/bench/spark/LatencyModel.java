package io.streamstate.bench.spark;

import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

/**
 * The latency a simulated storage adds to one operation, by operation kind, from a seeded random
 * source. One instance per simulated file system (per profile).
 *
 * <ul>
 *   <li>{@code none}: no latency (the local disk through the same wrapper).
 *   <li>{@code slow-datanode}: metadata 0.3-2 ms; each data write (at close of the stream, or an
 *       {@code hsync} of a stream kept open) is independently heavy-tailed: 2-12 ms plus 200 MB/s,
 *       and with probability {@link #STALL_PROBABILITY} a stall of 5-20 s times {@code stallScale}
 *       (short mode uses 0.1: 0.5-2 s) instead.
 *   <li>{@code busy-namenode}: every metadata operation (create, rename, delete, mkdirs, status,
 *       list) costs 2-6 ms times the number of metadata operations in flight (itself included), and
 *       global pauses (exponential gaps, mean 15 s, 3-10 s long times {@code stallScale}) hold
 *       every metadata caller until the pause ends. Data writes and reads 1-4 ms plus 200 MB/s.
 *   <li>{@code slow-datanode-periods}: DataNodes that are slow for periods (a {@link
 *       DataNodeCluster}: 6 DataNodes by default, each slow for 5-20 s times {@code stallScale}
 *       about 5 % of the time), and pipelines of 3 of them per file. A data write or {@code hsync}
 *       first waits, while a DataNode of its file's pipeline is slow, until that period ends, then
 *       pays slow-datanode's normal draw: 2-12 ms plus 200 MB/s. Metadata 0.3-2 ms.
 *   <li>{@code s3}: HEAD/create/mkdirs/delete 10-30 ms, LIST 20-50 ms, GET 15-40 ms plus 80 MB/s,
 *       PUT 25-60 ms plus 80 MB/s, rename = copy at 30 MB/s plus 45-90 ms.
 * </ul>
 *
 * <p>A read's bytes are charged as they are read from the open file ({@link #readTransferMs}), not
 * at its open: a reader that seeks past most of a file (a journal member) moves only what it reads,
 * as a GET streamed or a DataNode read does. The open itself pays the request's latency.
 *
 * <p>{@link #draw} is the model itself (no sleeping, deterministic for a seed and a sequence of
 * calls); {@link #delay} applies a draw by sleeping {@code latencyScale} times the drawn latency
 * (0: draw and account, never sleep), after waiting out a busy-namenode pause or a slow DataNode.
 * Pauses and slow periods follow the model's clock: ms since the model was created.
 */
final class LatencyModel {
  /** Operation kinds, also the counter names ({@link #counterName()}). */
  enum Op {
    CREATE,
    WRITE,
    /**
     * An {@code hsync} of an open stream: the bytes written since the last one go down the DataNode
     * pipeline, priced like a data write (HDFS asks the NameNode nothing for it).
     */
    SYNC,
    OPEN,
    RENAME,
    DELETE,
    MKDIRS,
    STATUS,
    LIST,
    /**
     * A NameNode block allocation, charged to a synced stream per 128 MiB past its first block
     * (every file's first block is folded into its create).
     */
    ADD_BLOCK;

    /** Everything but moving data bytes: create, rename, delete, mkdirs, status, list, addBlock. */
    boolean isMetadata() {
      return this != WRITE && this != OPEN && this != SYNC;
    }

    /** The counter's name: the kind in lower camel case ({@code create}, {@code addBlock}). */
    String counterName() {
      return this == ADD_BLOCK ? "addBlock" : name().toLowerCase(Locale.ROOT);
    }
  }

  /** The profile whose DataNodes are slow for periods ({@link DataNodeCluster}). */
  static final String SLOW_DATANODE_PERIODS = "slow-datanode-periods";

  /** slow-datanode: probability that one data write stalls. */
  static final double STALL_PROBABILITY = 0.01;

  /** slow-datanode: a stall lasts this long (ms) before {@code stallScale}. */
  static final double STALL_MIN_MS = 5_000;

  static final double STALL_MAX_MS = 20_000;

  /** busy-namenode: mean gap between global pauses, ms. */
  static final double PAUSE_MEAN_GAP_MS = 15_000;

  /** busy-namenode: a pause lasts this long (ms) before {@code stallScale}. */
  static final double PAUSE_MIN_MS = 3_000;

  static final double PAUSE_MAX_MS = 10_000;

  private final String profile;
  private final double stallScale;
  private final double latencyScale;
  private final SplittableRandom random;
  private final AtomicInteger metadataInFlight = new AtomicInteger();

  /** slow-datanode-periods: its DataNodes; null for the other profiles. */
  private final DataNodeCluster cluster;

  /** Pause schedule of busy-namenode, in ms since {@link #origin}: [start, end) pairs. */
  private final long[] pauses;

  private final long origin = System.nanoTime();

  /** The model's clock: ms since it was created, unless a test sets another ({@link #useClock}). */
  private volatile LongSupplier clockMs =
      () -> TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - origin);

  /** A model that sleeps the latencies it draws ({@code latencyScale} 1). */
  LatencyModel(String profile, long seed, double stallScale) {
    this(profile, seed, stallScale, 1.0);
  }

  LatencyModel(String profile, long seed, double stallScale, double latencyScale) {
    this(
        profile,
        seed,
        stallScale,
        latencyScale,
        DataNodeCluster.DEFAULT_DATANODES,
        DataNodeCluster.DEFAULT_REPLICATION);
  }

  /**
   * @param datanodes slow-datanode-periods: number of DataNodes (other profiles ignore it)
   * @param replication slow-datanode-periods: DataNodes per pipeline (other profiles ignore it)
   */
  LatencyModel(
      String profile,
      long seed,
      double stallScale,
      double latencyScale,
      int datanodes,
      int replication) {
    if (!isKnown(profile)) {
      throw new IllegalArgumentException(
          "Unknown simfs profile '"
              + profile
              + "' (none, slow-datanode, slow-datanode-periods, busy-namenode, s3)");
    }
    if (!(stallScale >= 0) || !(latencyScale >= 0)) {
      throw new IllegalArgumentException(
          "stallScale and latencyScale must be >= 0, got " + stallScale + ", " + latencyScale);
    }
    this.profile = profile;
    this.stallScale = stallScale;
    this.latencyScale = latencyScale;
    this.random = new SplittableRandom(seed);
    if (profile.equals("busy-namenode")) {
      SplittableRandom pauseRandom = new SplittableRandom(seed * 31 + 7);
      pauses = new long[2 * 2000];
      long t = 0;
      for (int i = 0; i < pauses.length; i += 2) {
        t += (long) (-Math.log(1 - pauseRandom.nextDouble()) * PAUSE_MEAN_GAP_MS);
        long duration =
            (long)
                ((PAUSE_MIN_MS + pauseRandom.nextDouble() * (PAUSE_MAX_MS - PAUSE_MIN_MS))
                    * stallScale);
        pauses[i] = t;
        pauses[i + 1] = t + duration;
        t += duration;
      }
    } else {
      pauses = new long[0];
    }
    this.cluster =
        profile.equals(SLOW_DATANODE_PERIODS)
            ? new DataNodeCluster(datanodes, replication, seed, stallScale)
            : null;
  }

  static boolean isKnown(String profile) {
    return switch (profile) {
      case "none", "slow-datanode", SLOW_DATANODE_PERIODS, "busy-namenode", "s3" -> true;
      default -> false;
    };
  }

  /**
   * The DataNodes files are written through, if this profile models them (slow-datanode-periods);
   * null otherwise.
   */
  DataNodeCluster cluster() {
    return cluster;
  }

  /** Replaces the model's clock (ms); tests use it to put a request inside a slow period. */
  void useClock(LongSupplier clockMs) {
    this.clockMs = clockMs;
  }

  /** The model's clock: ms since the model was created (or a test's clock). */
  long nowMs() {
    return clockMs.getAsLong();
  }

  private double uniform(double lo, double hi) {
    return lo + random.nextDouble() * (hi - lo);
  }

  /**
   * Draws the latency of one operation of kind {@code op} moving {@code bytes} bytes (the file's
   * size for a write, read or rename), without sleeping. Every call advances the seeded sequence
   * the same way whatever the outcome, so the same seed and the same calls give the same values.
   *
   * @param metadataLoad metadata operations in flight, this one included (busy-namenode only; other
   *     profiles ignore it)
   * @return latency in ms, before {@code latencyScale}
   */
  synchronized double draw(Op op, long bytes, int metadataLoad) {
    switch (profile) {
      case "slow-datanode" -> {
        if (op == Op.WRITE || op == Op.SYNC) {
          double chance = random.nextDouble();
          double stall = uniform(STALL_MIN_MS, STALL_MAX_MS) * stallScale;
          double normal = uniform(2, 12);
          return (chance < STALL_PROBABILITY ? stall : normal) + bytes / 200_000.0; // 200 MB/s
        }
        return uniform(0.3, 2);
      }
      case SLOW_DATANODE_PERIODS -> {
        // The slow DataNodes' wait is the pipeline's (delay); this is the normal draw.
        if (op == Op.WRITE || op == Op.SYNC) {
          return uniform(2, 12) + bytes / 200_000.0; // 200 MB/s
        }
        return uniform(0.3, 2);
      }
      case "busy-namenode" -> {
        if (op.isMetadata()) {
          return uniform(2, 6) * Math.max(1, metadataLoad);
        }
        return uniform(1, 4) + bytes / 200_000.0;
      }
      case "s3" -> {
        return switch (op) {
          case WRITE, SYNC -> uniform(25, 60) + bytes / 80_000.0; // PUT, 80 MB/s
          case OPEN -> uniform(15, 40) + bytes / 80_000.0; // GET
          case LIST -> uniform(20, 50);
          case RENAME -> uniform(30, 60) + bytes / 30_000.0 + uniform(15, 30); // copy + delete
          case CREATE, STATUS, MKDIRS, DELETE, ADD_BLOCK -> uniform(10, 30); // HEAD / marker ops
        };
      }
      default -> {
        return 0;
      }
    }
  }

  /**
   * busy-namenode: how long a metadata call made {@code atMs} ms after the model was created waits
   * for the global pause covering that instant (0 outside pauses and for other profiles), before
   * {@code latencyScale}.
   */
  long pauseRemainingMs(long atMs) {
    for (int i = 0; i < pauses.length; i += 2) {
      if (atMs < pauses[i]) {
        return 0;
      }
      if (atMs < pauses[i + 1]) {
        return pauses[i + 1] - atMs;
      }
    }
    return 0;
  }

  /** The profile's name ({@code none}, {@code slow-datanode}, ...). */
  String profile() {
    return profile;
  }

  /**
   * The outcome of one {@link #delay}: the model's latency (waits included), the time actually
   * slept, and the part of the model's latency spent waiting for a slow DataNode of the pipeline.
   */
  record Delay(double modelMs, long sleptMs, long slowNodeWaitMs) {}

  /** {@link #delay(Op, long, int[])} of an operation that goes through no DataNode pipeline. */
  Delay delay(Op op, long bytes) throws InterruptedException {
    return delay(op, bytes, null);
  }

  /**
   * Waits out a busy-namenode pause (metadata only) or, for a data write or sync through {@code
   * pipeline} (DataNode indexes of this model's {@link #cluster()}; null: none), a slow DataNode of
   * it; draws the latency of one operation and sleeps {@code latencyScale} times it all.
   */
  Delay delay(Op op, long bytes, int[] pipeline) throws InterruptedException {
    long slept = 0; // ns actually slept: with latencyScale 0, exactly 0 (no scheduling noise)
    double ms;
    long slowNodeWait = 0;
    if (cluster != null && pipeline != null && (op == Op.WRITE || op == Op.SYNC)) {
      slowNodeWait = cluster.pipelineWaitMs(pipeline, nowMs());
      ms = slowNodeWait + draw(op, bytes, 1);
      slept += sleepMs(slowNodeWait * latencyScale);
      slept += sleepMs((ms - slowNodeWait) * latencyScale);
    } else if (profile.equals("busy-namenode") && op.isMetadata()) {
      int load = metadataInFlight.incrementAndGet();
      try {
        long now = nowMs();
        double pause = pauseRemainingMs(now);
        ms = pause + draw(op, bytes, load);
        slept += sleepMs(pause * latencyScale);
        slept += sleepMs((ms - pause) * latencyScale);
      } finally {
        metadataInFlight.decrementAndGet();
      }
    } else {
      ms = draw(op, bytes, 1);
      slept += sleepMs(ms * latencyScale);
    }
    return new Delay(ms, TimeUnit.NANOSECONDS.toMillis(slept), slowNodeWait);
  }

  /**
   * The transfer time of {@code bytes} read from an open file, ms before {@code latencyScale}: the
   * bandwidth term of a read's draw, which {@link #draw} leaves out when an open passes 0 bytes.
   */
  double readTransferMs(long bytes) {
    return switch (profile) {
      case "busy-namenode" -> bytes / 200_000.0; // 200 MB/s
      case "s3" -> bytes / 80_000.0; // 80 MB/s
      default -> 0; // the HDFS profiles without a bandwidth term price a read per open only
    };
  }

  /** Sleeps {@code latencyScale} times {@code ms}; returns the ms slept. */
  long sleepScaled(double ms) throws InterruptedException {
    return TimeUnit.NANOSECONDS.toMillis(sleepMs(ms * latencyScale));
  }

  /** Sleeps {@code ms}; returns the nanoseconds it took (0 when there is nothing to sleep). */
  private static long sleepMs(double ms) throws InterruptedException {
    if (ms <= 0) {
      return 0;
    }
    long nanos = (long) (ms * 1_000_000);
    long start = System.nanoTime();
    Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
    return System.nanoTime() - start;
  }
}
