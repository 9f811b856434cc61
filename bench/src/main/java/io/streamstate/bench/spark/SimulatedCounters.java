package io.streamstate.bench.spark;

import io.streamstate.bench.spark.LatencyModel.Op;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Pattern;

/**
 * What one profile of the {@link SimulatedFileSystem} did: operation counts by kind, split by the
 * part of the storage a request was on ({@link Area}), bytes, files written and injected delay.
 * Apart from the file system so that the benchmark's recorder and report name its keys without the
 * file system's plumbing.
 */
public final class SimulatedCounters {
  /** Anything under a checkpoint's {@code state/} directory. */
  private static final Pattern STATE_FILES = Pattern.compile("/state/");

  /**
   * Anything under a {@code sink/} directory: the benchmark's file sink output ({@code part-} files
   * and the sink's {@code _spark_metadata} log), next to the checkpoints.
   */
  private static final Pattern SINK_FILES = Pattern.compile("/sink/");

  /** Which part of the storage a request is on, for the split counters. */
  enum Area {
    /** Under a checkpoint's {@code state/}: a state store's own files. */
    STATE,
    /** Under {@code sink/}: the file sink's output and its log. */
    SINK,
    /** Anything else: Spark's offset, commit and metadata logs. */
    OTHER;

    /**
     * Where {@code path} (a local path) is: under a checkpoint's {@code state/} directory (a state
     * store's file or directory, any provider's), under the file sink's {@code sink/} directory, or
     * elsewhere (Spark's offset, commit and metadata logs).
     */
    static Area of(String path) {
      if (STATE_FILES.matcher(path).find()) {
        return STATE;
      }
      return SINK_FILES.matcher(path).find() ? SINK : OTHER;
    }

    /** The area of a rename: state or sink when either side is (state first). */
    static Area of(String source, String target) {
      Area a = of(source);
      Area b = of(target);
      if (a == STATE || b == STATE) {
        return STATE;
      }
      return a == SINK || b == SINK ? SINK : OTHER;
    }
  }

  private final Map<Op, LongAdder> ops = new ConcurrentHashMap<>();

  /** The part of {@link #ops} on paths under a {@code /state/} directory. */
  private final Map<Op, LongAdder> stateOps = new ConcurrentHashMap<>();

  /** The part of {@link #ops} on paths under a {@code /sink/} directory. */
  private final Map<Op, LongAdder> sinkOps = new ConcurrentHashMap<>();

  final LongAdder bytesWritten = new LongAdder();
  final LongAdder bytesRead = new LongAdder();
  final LongAdder filesWritten = new LongAdder();
  final LongAdder stateFilesWritten = new LongAdder();
  final LongAdder sinkFilesWritten = new LongAdder();
  final LongAdder delayMs = new LongAdder();
  final DoubleAdder modelMs = new DoubleAdder();
  final LongAdder slowNodeWaits = new LongAdder();
  final LongAdder slowNodeWaitMs = new LongAdder();
  final LongAdder favoredCreates = new LongAdder();
  final LongAdder favoredCreatesOnSlow = new LongAdder();

  SimulatedCounters() {
    for (Op op : Op.values()) {
      ops.put(op, new LongAdder());
      stateOps.put(op, new LongAdder());
      sinkOps.put(op, new LongAdder());
    }
  }

  /** Counts one request of kind {@code op} on {@code area}. */
  void count(Op op, Area area) {
    ops.get(op).increment();
    if (area == Area.STATE) {
      stateOps.get(op).increment();
    } else if (area == Area.SINK) {
      sinkOps.get(op).increment();
    }
  }

  /** Counts one file written (a stream closed) on {@code area}. */
  void countFile(Area area) {
    filesWritten.increment();
    if (area == Area.STATE) {
      stateFilesWritten.increment();
    } else if (area == Area.SINK) {
      sinkFilesWritten.increment();
    }
  }

  /**
   * A snapshot: operation counts by lower-case kind ({@code create}, {@code write} = a stream's
   * close, {@code open}, {@code rename}, {@code delete}, {@code mkdirs}, {@code status}, {@code
   * list}), {@code metadataOps} (every kind but write and open), {@code bytesWritten}, {@code
   * bytesRead}, {@code filesWritten} (streams closed), {@code stateFilesWritten} (those under a
   * {@code /state/} directory: state store files, not Spark's offset and commit logs), {@code
   * delayMs} (time spent in injected latency) and {@code modelMs} (the latencies drawn, before
   * {@code fs.simfs.latencyScale}; rounded down).
   *
   * <p>The same split for the other requests: {@code stateCreate}, {@code stateOpen}, {@code
   * stateRename}, {@code stateDelete}, {@code stateMkdirs}, {@code stateStatus}, {@code stateList}
   * count those of each kind on a path under a {@code /state/} directory (a rename when its source
   * or its target is), and {@code stateMetadataOps} is the part of {@code metadataOps} among them.
   * The data writes under {@code /state/} are {@code stateFilesWritten}. The same for the file
   * sink's output, under a {@code /sink/} directory: {@code sinkCreate}, ..., {@code
   * sinkMetadataOps}, {@code sinkFilesWritten}.
   *
   * <p>slow-datanode-periods: {@code slowNodeWaits} counts the data writes and syncs that waited
   * for a slow DataNode of their pipeline, {@code slowNodeWaitMs} the model's time they waited
   * (before {@code fs.simfs.latencyScale}), {@code favoredCreates} the creates that named favoured
   * DataNodes ({@code SimulatedFileSystem.create(path, overwrite, favoredNodes)}), {@code
   * favoredCreatesOnSlow} those of them whose pipeline held a DataNode slow at the create (a hedge
   * copy or a file placed away from suspects that met a slow DataNode all the same).
   */
  public Map<String, Long> snapshot() {
    Map<String, Long> m = new TreeMap<>();
    long metadata = 0;
    long stateMetadata = 0;
    long sinkMetadata = 0;
    for (Op op : Op.values()) {
      long n = ops.get(op).sum();
      m.put(op.counterName(), n);
      metadata += op.isMetadata() ? n : 0;
      if (op != Op.WRITE) {
        long s = stateOps.get(op).sum();
        m.put(areaKey(Area.STATE, op), s);
        stateMetadata += op.isMetadata() ? s : 0;
        long k = sinkOps.get(op).sum();
        m.put(areaKey(Area.SINK, op), k);
        sinkMetadata += op.isMetadata() ? k : 0;
      }
    }
    m.put("metadataOps", metadata);
    m.put("stateMetadataOps", stateMetadata);
    m.put("sinkMetadataOps", sinkMetadata);
    m.put("bytesWritten", bytesWritten.sum());
    m.put("bytesRead", bytesRead.sum());
    m.put("filesWritten", filesWritten.sum());
    m.put("stateFilesWritten", stateFilesWritten.sum());
    m.put("sinkFilesWritten", sinkFilesWritten.sum());
    m.put("delayMs", delayMs.sum());
    m.put("modelMs", (long) modelMs.sum());
    m.put("slowNodeWaits", slowNodeWaits.sum());
    m.put("slowNodeWaitMs", slowNodeWaitMs.sum());
    m.put("favoredCreates", favoredCreates.sum());
    m.put("favoredCreatesOnSlow", favoredCreatesOnSlow.sum());
    return m;
  }

  /**
   * The {@link #snapshot()} key of the requests of kind {@code op} under a {@code /state/}
   * directory: {@code state} and the kind, capitalized ({@code stateCreate}, {@code stateList}).
   */
  static String stateKey(Op op) {
    return areaKey(Area.STATE, op);
  }

  /**
   * The {@link #snapshot()} key of the requests of kind {@code op} on {@code area} ({@code STATE}
   * or {@code SINK}): the area's name in lower case and the kind, capitalized ({@code stateCreate},
   * {@code sinkList}).
   */
  static String areaKey(Area area, Op op) {
    String kind = op.counterName();
    return area.name().toLowerCase(Locale.ROOT)
        + Character.toUpperCase(kind.charAt(0))
        + kind.substring(1);
  }
}
