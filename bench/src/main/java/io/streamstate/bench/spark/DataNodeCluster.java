package io.streamstate.bench.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The DataNodes of the {@code slow-datanode-periods} profile: {@code N} DataNodes, each slow for
 * periods at random times, and the write pipelines files take through them.
 *
 * <p><b>Slow periods.</b> Each DataNode alternates between normal and slow (busy disk, GC pause,
 * failing NIC): normal for an exponentially distributed gap of mean {@link #MEAN_GAP_MS}, then slow
 * for {@link #SLOW_MIN_MS}-{@link #SLOW_MAX_MS} (uniform), both times {@code stallScale}. Scaling
 * gaps and periods alike keeps the fraction of slow time the same at every scale: a DataNode is
 * slow {@link #expectedSlowFraction()} of the time (12.5 / 252.5 s = 4.95 %), so with 6 DataNodes
 * some DataNode is slow {@link #expectedAnySlowFraction 26 %} of the time and a given pipeline of 3
 * holds a slow one 14 % of the time. Each DataNode's schedule comes from its own seeded random
 * source and starts ten mean cycles before the cluster's clock starts, so it is in its steady state
 * from the first instant; it is generated as far as it is asked about and never changes.
 *
 * <p><b>Pipelines.</b> A file's pipeline is {@code replication} distinct DataNodes, picked at
 * random at create (or the favoured ones the creator names, filled up at random) and kept for the
 * file's life, as HDFS does for a block; files here stay within one block. A data operation (a
 * stream's data write at close, an {@code hsync}) waits, while any DataNode of its pipeline is
 * slow, for that period to end ({@link #pipelineWaitMs}): the packet is held until every DataNode
 * of the pipeline has acknowledged it.
 *
 * <p>Deterministic for a seed: the schedules depend on nothing else, and the pipelines on the
 * sequence of {@link #pickPipeline} calls.
 */
final class DataNodeCluster {
  /** A slow period lasts this long (ms) before {@code stallScale}. */
  static final double SLOW_MIN_MS = 5_000;

  static final double SLOW_MAX_MS = 20_000;

  /**
   * Mean time (ms, before {@code stallScale}) a DataNode is normal between two slow periods: about
   * once every 4 minutes each, so that with 6 DataNodes one of them is slow about a quarter of the
   * time and a period begins somewhere about every 42 s.
   */
  static final double MEAN_GAP_MS = 240_000;

  static final int DEFAULT_DATANODES = 6;
  static final int DEFAULT_REPLICATION = 3;

  /** The schedule begins this many mean cycles before the clock's 0: steady state from 0 on. */
  private static final int WARM_UP_CYCLES = 10;

  private final int replication;
  private final DataNode[] nodes;
  private final SplittableRandom pipelineRandom;

  /**
   * @param datanodes number of DataNodes, at least {@code replication}
   * @param replication DataNodes per pipeline, at least 1
   * @param stallScale scales the slow periods and the gaps between them; 0: never slow
   */
  DataNodeCluster(int datanodes, int replication, long seed, double stallScale) {
    if (replication < 1 || datanodes < replication) {
      throw new IllegalArgumentException(
          "simfs needs 1 <= fs.simfs.replication <= fs.simfs.datanodes, got replication "
              + replication
              + " and "
              + datanodes
              + " DataNodes");
    }
    if (!(stallScale >= 0)) {
      throw new IllegalArgumentException("stallScale must be >= 0, got " + stallScale);
    }
    this.replication = replication;
    SplittableRandom base = new SplittableRandom(seed * 31 + 17);
    this.pipelineRandom = base.split();
    this.nodes = new DataNode[datanodes];
    for (int i = 0; i < datanodes; i++) {
      nodes[i] = new DataNode(base.split(), stallScale);
    }
  }

  /** The fraction of time one DataNode is slow: mean period / (mean gap + mean period). */
  static double expectedSlowFraction() {
    double meanSlow = (SLOW_MIN_MS + SLOW_MAX_MS) / 2;
    return meanSlow / (MEAN_GAP_MS + meanSlow);
  }

  /** The fraction of time at least one of {@code n} independent DataNodes is slow. */
  static double expectedAnySlowFraction(int n) {
    return 1 - Math.pow(1 - expectedSlowFraction(), n);
  }

  int size() {
    return nodes.length;
  }

  int replication() {
    return replication;
  }

  /** The name of DataNode {@code index} (0-based): {@code dn1} .. {@code dnN}. */
  static String name(int index) {
    return "dn" + (index + 1);
  }

  /** The index of the DataNode called {@code name}, or -1 if this cluster has none by that name. */
  int indexOf(String name) {
    if (name == null || !name.startsWith("dn")) {
      return -1;
    }
    try {
      int i = Integer.parseInt(name.substring(2)) - 1;
      return i >= 0 && i < nodes.length && name.equals(name(i)) ? i : -1;
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  /** The names of the DataNodes of {@code pipeline}, first to last. */
  static List<String> names(int[] pipeline) {
    List<String> names = new ArrayList<>(pipeline.length);
    for (int i : pipeline) {
      names.add(name(i));
    }
    return List.copyOf(names);
  }

  /**
   * A new file's pipeline: the first {@code replication} distinct DataNodes of {@code favored} that
   * this cluster has (unknown names are ignored, as HDFS ignores a favoured node it cannot use),
   * filled up with DataNodes picked at random.
   */
  synchronized int[] pickPipeline(List<String> favored) {
    int[] pipeline = new int[replication];
    int n = 0;
    for (String name : favored) {
      int i = indexOf(name);
      if (i >= 0 && !contains(pipeline, n, i)) {
        pipeline[n++] = i;
        if (n == replication) {
          return pipeline;
        }
      }
    }
    while (n < replication) {
      int i = pipelineRandom.nextInt(nodes.length);
      if (!contains(pipeline, n, i)) {
        pipeline[n++] = i;
      }
    }
    return pipeline;
  }

  private static boolean contains(int[] a, int n, int x) {
    for (int i = 0; i < n; i++) {
      if (a[i] == x) {
        return true;
      }
    }
    return false;
  }

  /**
   * The end (ms on the cluster's clock) of the slow period of DataNode {@code node} covering {@code
   * atMs}, or {@code atMs} if it is not slow then.
   */
  long slowUntilMs(int node, long atMs) {
    return nodes[node].slowUntil(atMs);
  }

  /**
   * How long a data operation on {@code pipeline} starting at {@code atMs} is held: until no
   * DataNode of the pipeline is slow (a period of one that begins while another's holds the packet
   * holds it too). 0 if none is slow at {@code atMs}.
   */
  long pipelineWaitMs(int[] pipeline, long atMs) {
    long t = atMs;
    boolean held = true;
    while (held) {
      held = false;
      for (int node : pipeline) {
        long until = nodes[node].slowUntil(t);
        if (until > t) {
          t = until;
          held = true;
        }
      }
    }
    return t - atMs;
  }

  /** One DataNode's slow periods, [start, end) in ms on the cluster's clock, in order. */
  private static final class DataNode {
    private final SplittableRandom random;
    private final double scale;
    private long[] starts = new long[16];
    private long[] ends = new long[16];
    private int count;

    /** Where the next gap begins (ms): the end of the last period generated. */
    private double cursor;

    DataNode(SplittableRandom random, double scale) {
      this.random = random;
      this.scale = scale;
      double meanCycle = MEAN_GAP_MS + (SLOW_MIN_MS + SLOW_MAX_MS) / 2;
      this.cursor = -WARM_UP_CYCLES * meanCycle * scale;
    }

    synchronized long slowUntil(long atMs) {
      if (scale == 0) {
        return atMs;
      }
      // Generate until a period begins after atMs: every period that can cover atMs is known.
      while (count == 0 || starts[count - 1] <= atMs) {
        generateOne();
      }
      int i = Arrays.binarySearch(starts, 0, count, atMs);
      int last = i >= 0 ? i : -i - 2; // the last period starting at or before atMs
      return last >= 0 && atMs < ends[last] ? ends[last] : atMs;
    }

    private void generateOne() {
      double start = cursor - Math.log(1 - random.nextDouble()) * MEAN_GAP_MS * scale;
      double end =
          start + (SLOW_MIN_MS + random.nextDouble() * (SLOW_MAX_MS - SLOW_MIN_MS)) * scale;
      cursor = end;
      if (end <= 0) {
        return; // before the clock starts (warm-up)
      }
      if (count == starts.length) {
        starts = Arrays.copyOf(starts, count * 2);
        ends = Arrays.copyOf(ends, count * 2);
      }
      starts[count] = (long) Math.floor(start);
      ends[count] = (long) Math.ceil(end);
      count++;
    }
  }
}
