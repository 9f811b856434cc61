package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.hedge.HedgeMetrics;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.hadoop.HadoopStorage;
import io.streamstate.hadoop.HadoopStorages;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What the file-sink tasks of one executor process share ({@code
 * io.streamstate.spark.HedgedFileCommitProtocol}): the hedged writers of sink files and the storage
 * of each sink directory (the spill files are under the adapter's {@code
 * LocalDirs.sinkSpillRoot()}). Spark instantiates the commit protocol by reflection, once per batch
 * and task, so these live here, a component of the process's {@link ProcessResources}.
 *
 * <p><b>Hedgers.</b> Apart from the state stores' and the log writes' (their latencies would mix
 * changelogs of kilobytes with output files of up to hundreds of megabytes, and either deadline
 * would be wrong for the other), and one per size class of file ({@value #SIZE_CLASSES} classes: up
 * to 1 MiB, 16 MiB, 256 MiB, larger), so that the deadline of a file follows the latencies of files
 * of about its size. Each class keeps its own budget, so over time at most about {@code
 * hedge.budgetFraction} of each class's writes are hedged. The policy comes from our {@code
 * hedge.*} keys as Spark copies them into the task's Hadoop configuration ({@link
 * StreamStateSettings#hedgePolicy(Configuration)}); the writers are the process's {@link Hedgers}
 * of kind {@link Hedgers.Kind#SINK_OUTPUTS}.
 *
 * <p>Public for the adapters' commit protocol; not an API.
 */
public final class HedgedSinkWrites {
  private static final Logger LOG = LoggerFactory.getLogger(HedgedSinkWrites.class);

  /** Upper size bounds of the size classes but the last (which has none). */
  private static final long[] SIZE_CLASS_LIMITS = {1L << 20, 16L << 20, 256L << 20};

  static final int SIZE_CLASSES = SIZE_CLASS_LIMITS.length + 1;

  private final Hedgers hedgers;
  private final Map<String, SinkLocation> locations = new ConcurrentHashMap<>();

  private HedgedSinkWrites(Hedgers hedgers) {
    this.hedgers = hedgers;
  }

  /** The sink writes of {@code resources}. */
  public static HedgedSinkWrites of(ProcessResources resources) {
    return resources.component(
        HedgedSinkWrites.class, () -> new HedgedSinkWrites(Hedgers.of(resources)));
  }

  /**
   * Where a sink's files go: the storage of its directory, the qualified directory (for the paths
   * listed in {@code _spark_metadata}), and the replication and block size its files get.
   */
  public record SinkLocation(Storage storage, Path root, short replication, long blockSize) {
    /** The qualified path of the file {@code name} (relative, {@code /}-separated). */
    public Path pathOf(String name) {
      return new Path(root, name);
    }
  }

  /** The hedged writer for a file of {@code length} bytes, with the policy of {@code conf}. */
  public HedgedWriter writer(Configuration conf, long length) {
    int sizeClass = 0;
    while (sizeClass < SIZE_CLASS_LIMITS.length && length > SIZE_CLASS_LIMITS[sizeClass]) {
      sizeClass++;
    }
    HedgePolicy policy =
        StreamStateSettings.hedgePolicy(conf); // a new instance: each class its own
    return hedgers.writer(Hedgers.Kind.SINK_OUTPUTS, policy, sizeClass);
  }

  /** The counters of every sink-file hedger of this process, summed. */
  public HedgeMetrics.Snapshot totals() {
    return hedgers.totals(Hedgers.Kind.SINK_OUTPUTS);
  }

  /**
   * The location of the sink directory {@code outputPath}, opened once per process: the core's NIO
   * storage for {@code file:}, else a Hadoop storage. A store without create-if-absent is accepted
   * in single-writer mode: sink file names are attempt-unique (UUIDs), so no two writers ever race
   * for one.
   */
  public SinkLocation location(String outputPath, Configuration conf) {
    return locations.computeIfAbsent(outputPath, p -> open(p, conf));
  }

  private static SinkLocation open(String outputPath, Configuration conf) {
    Path path = new Path(outputPath);
    FileSystem fs;
    try {
      fs = path.getFileSystem(conf);
    } catch (IOException e) {
      throw new UncheckedIOException("Cannot resolve the file system of sink " + outputPath, e);
    }
    Path root = fs.makeQualified(path);
    Storage storage;
    try {
      storage = HadoopStorages.open(root.toUri(), conf);
    } catch (UnsupportedException e) {
      LOG.info(
          "Sink {} is on a store without create-if-absent; its files have attempt-unique names,"
              + " so they are written in single-writer mode",
          root);
      storage = HadoopStorage.openAllowingSingleWriter(fs, root);
    }
    return new SinkLocation(
        storage, root, fs.getDefaultReplication(root), fs.getDefaultBlockSize(root));
  }
}
