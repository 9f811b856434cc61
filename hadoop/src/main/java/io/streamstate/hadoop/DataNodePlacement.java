package io.streamstate.hadoop;

import io.streamstate.core.ProcessResources;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where new files of one file system go, given what its cluster's {@link SlowDataNodes} knows, and
 * what its writes report to it: the one way {@link HadoopStorage} and the Spark checkpoint file
 * manager create files on a file system with DataNode pipelines, and watch the streams they write.
 *
 * <p>The pipelines come from the file system itself if it implements {@link
 * SupportsDataNodePipelines} (a simulation of HDFS), else from this module's adapter for a {@code
 * DistributedFileSystem}; any other file system has none, and then {@link #create} is {@code
 * fs.create} and {@link TrackedWrite} only syncs.
 */
public final class DataNodePlacement {
  private static final Logger LOG = LoggerFactory.getLogger(DataNodePlacement.class);

  /**
   * How long a late report waits at most for a stream's pipeline from another thread, before it
   * takes the one its writer saw last: {@code DFSOutputStream.getPipeline()} waits while the writer
   * is inside {@code close()} or a blocked {@code write}, and a report is made on the thread that
   * is about to start a hedge.
   */
  static final long LOOKUP_WAIT_MILLIS = 100;

  /** While the pipeline is unknown, or after this many bytes, the writer looks again. */
  private static final long LOOK_AGAIN_BYTES = 1 << 20;

  /** The pool of {@link ProcessResources} that looks at pipelines for late reports. */
  static final String LOOKUP_POOL = "pipeline-lookup";

  private final FileSystem fs;
  private final SupportsDataNodePipelines pipelines; // null: no tracking
  private final SlowDataNodes slow; // null: no tracking

  /** Looks at pipelines for late reports (daemon threads, made as needed); null: no tracking. */
  private final ExecutorService lookups;

  private DataNodePlacement(
      FileSystem fs,
      SupportsDataNodePipelines pipelines,
      SlowDataNodes slow,
      ExecutorService lookups) {
    this.fs = fs;
    this.pipelines = pipelines;
    this.slow = slow;
    this.lookups = lookups;
  }

  /**
   * Placement on {@code fs}, tracked by its cluster's shared tracking in this process ({@link
   * ProcessResources#shared()}): {@link #of(FileSystem, ProcessResources)}.
   */
  public static DataNodePlacement of(FileSystem fs) {
    return of(fs, ProcessResources.shared());
  }

  /**
   * Placement on {@code fs}, tracked by its cluster's {@link SlowDataNodes#of(FileSystem,
   * ProcessResources) tracking} held by {@code resources}, whose pool looks at pipelines.
   */
  public static DataNodePlacement of(FileSystem fs, ProcessResources resources) {
    SupportsDataNodePipelines p = pipelinesOf(fs);
    return p == null
        ? new DataNodePlacement(fs, null, null, null)
        : of(fs, SlowDataNodes.of(fs, resources), resources);
  }

  /**
   * Placement on {@code fs} tracked by {@code slow} (tests: tracking with a clock of their own),
   * pipelines looked at by the pool of this process's {@link ProcessResources#shared() owner}.
   */
  public static DataNodePlacement of(FileSystem fs, SlowDataNodes slow) {
    return of(fs, slow, ProcessResources.shared());
  }

  /** Placement on {@code fs} tracked by {@code slow}, pipelines looked at by {@code resources}. */
  public static DataNodePlacement of(
      FileSystem fs, SlowDataNodes slow, ProcessResources resources) {
    SupportsDataNodePipelines p = pipelinesOf(fs);
    return p == null || !slow.enabled()
        ? new DataNodePlacement(fs, null, null, null)
        : new DataNodePlacement(fs, p, slow, resources.cachedPool(LOOKUP_POOL));
  }

  /**
   * The pipelines of {@code fs}: its own if it implements {@link SupportsDataNodePipelines} (that
   * wins), HDFS's adapter for a {@code DistributedFileSystem}, else null.
   */
  static SupportsDataNodePipelines pipelinesOf(FileSystem fs) {
    if (fs instanceof SupportsDataNodePipelines own) {
      return own;
    }
    if (CreateIfAbsent.isHdfs(fs)) {
      return HdfsDataNodePipelines.of(fs);
    }
    return null;
  }

  /** Whether this file system's pipelines are tracked (else: plain creates, no reports). */
  public boolean tracksPipelines() {
    return pipelines != null;
  }

  /** The tracking, or null if pipelines are not tracked. */
  public SlowDataNodes slowDataNodes() {
    return slow;
  }

  /**
   * Creates {@code path} as {@code fs.create(path, overwrite)} does (with overwrite false, as
   * atomically), on favoured DataNodes while some are suspect ({@link SlowDataNodes#favoredNodes}).
   */
  public FSDataOutputStream create(Path path, boolean overwrite) throws IOException {
    if (pipelines != null) {
      List<String> favored = slow.favoredNodes(fs.getDefaultReplication(path));
      if (!favored.isEmpty()) {
        LOG.debug("Creating {} on {}, away from suspect DataNodes {}", path, favored, slow);
        try {
          return pipelines.create(path, overwrite, favored);
        } catch (IllegalArgumentException | UnsupportedOperationException e) {
          // A hint the file system refuses (a name it no longer knows): place it as usual.
          LOG.warn("Cannot create {} on favoured DataNodes {}: {}", path, favored, e.toString());
        }
      }
    }
    return fs.create(path, overwrite);
  }

  /** Watches {@code out}, a stream of this file system, while its one writer writes it. */
  public TrackedWrite track(FSDataOutputStream out) {
    return new TrackedWrite(out);
  }

  /**
   * One stream being written, seen by its writer and by whoever finds it late. The writer calls
   * {@link #wrote} after its writes and {@link #hsync} to sync; a late report ({@link #reportLate})
   * may come from any thread. Without tracking, {@code hsync} is the stream's and the rest does
   * nothing.
   */
  public final class TrackedWrite {
    private final FSDataOutputStream out;

    /** The pipeline the writer saw last (empty: none yet). */
    private volatile List<String> pipeline = List.of();

    /** The pipeline of the last completed {@code hsync} (empty: none yet); the writer's. */
    private List<String> synced = List.of();

    /** Whether the writer is in {@code hsync}, which does not hold the stream while it waits. */
    private volatile boolean syncing;

    /** The pipeline reported late, and when (null: none); see {@link #hsync}. */
    private volatile List<String> reported;

    private volatile long reportedAtMillis;

    private long bytesSinceLook; // the writer's

    private TrackedWrite(FSDataOutputStream out) {
      this.out = out;
    }

    /**
     * The writer wrote {@code bytes} more: looks at the pipeline again while it is unknown (it is
     * set up at the first packet), and every megabyte (a new block has a new pipeline).
     */
    public void wrote(int bytes) {
      if (pipelines == null) {
        return;
      }
      bytesSinceLook += bytes;
      if (pipeline.isEmpty() || bytesSinceLook >= LOOK_AGAIN_BYTES) {
        look();
      }
    }

    /**
     * {@code out.hsync()}: while it waits, a late report may look at the pipeline; once it returns,
     * the pipeline is remembered (for reports during {@code close}, which holds the stream) and its
     * DataNodes are known to work; those of the last completed sync's pipeline that left it were
     * removed by pipeline recovery ({@link SlowDataNodes#dropped}).
     */
    public void hsync() throws IOException {
      if (pipelines == null) {
        out.hsync();
        return;
      }
      look();
      syncing = true;
      try {
        out.hsync();
        look();
      } finally {
        syncing = false;
      }
      List<String> now = pipeline;
      // d6: pipeline recovery (during this sync, or while the stream was idle) removed these.
      List<String> dropped = synced.stream().filter(node -> !now.contains(node)).toList();
      synced = now;
      if (!dropped.isEmpty()) {
        slow.dropped(dropped);
      }
      slow.recordWorking(now);
      List<String> late = reported;
      if (late != null) {
        // Completed soon after its report: noise, not a held pipeline (d1').
        reported = null;
        slow.lateWriteCompleted(late, reportedAtMillis);
      }
    }

    /** The writer's thread only: the stream's pipeline now. */
    private void look() {
      bytesSinceLook = 0;
      List<String> now = pipelines.pipelineOf(out);
      if (!now.isEmpty()) {
        pipeline = now;
      }
    }

    /**
     * This write is late: the DataNodes of its pipeline become suspect. Quick: looks at the stream
     * from another thread for at most {@value DataNodePlacement#LOOKUP_WAIT_MILLIS} ms, and only
     * while its writer is syncing; otherwise, and after that, uses the pipeline the writer saw
     * last. Never throws.
     */
    public void reportLate() {
      if (pipelines == null) {
        return;
      }
      List<String> late = syncing ? lookFromElsewhere() : null;
      if (late == null || late.isEmpty()) {
        late = pipeline;
      }
      if (late.isEmpty()) {
        LOG.debug("A write is late before its pipeline is known (no block yet): nothing to avoid");
        return;
      }
      reportedAtMillis = slow.nowMillis();
      reported = late;
      slow.suspect(late);
    }

    private List<String> lookFromElsewhere() {
      Future<List<String>> lookup;
      try {
        lookup = lookups.submit(() -> pipelines.pipelineOf(out));
      } catch (RejectedExecutionException e) {
        return null;
      }
      try {
        return lookup.get(LOOKUP_WAIT_MILLIS, TimeUnit.MILLISECONDS);
      } catch (TimeoutException e) {
        return null; // the writer holds the stream (it left hsync meanwhile): what it saw last
      } catch (ExecutionException | RuntimeException e) {
        LOG.debug("Cannot look at the pipeline of a late write: {}", e.toString());
        return null;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return null;
      }
    }

    /**
     * Whether the pipeline the writer saw last holds a suspect DataNode and a new file could be
     * placed away from the suspects ({@link SlowDataNodes#isAvoidable}).
     */
    public boolean isSuspectedSlow() {
      return pipelines != null && slow.isAvoidable(pipeline);
    }

    /** The pipeline the writer saw last (empty: none yet, or not tracked). */
    public List<String> pipeline() {
      return pipeline;
    }
  }
}
