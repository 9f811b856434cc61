package io.streamstate.hadoop;

import java.io.IOException;
import java.io.OutputStream;
import java.util.List;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;

/**
 * A Hadoop file system whose files are written through a pipeline of DataNodes picked when the file
 * is created and kept for its life, as HDFS does: it can say which DataNodes an open stream writes
 * through, and create a file on DataNodes the caller favours. A DataNode that is slow for a while
 * (busy disk, GC pause, failing NIC) holds every pipeline through it; knowing the pipelines lets a
 * writer send its hedge copies and its next files elsewhere.
 *
 * <p>HDFS ({@code DistributedFileSystem}) is adapted to this by the module itself; another file
 * system (a simulation of HDFS, for example) implements it directly. DataNodes are named by strings
 * the file system chooses (HDFS: {@code host:xferPort}); a name returned by {@link #pipelineOf} is
 * accepted by {@link #create}.
 */
public interface SupportsDataNodePipelines {

  /**
   * The DataNodes {@code out} (a stream this file system created) writes through now, first to
   * last; empty if it has none yet (no byte sent) or is not one of this file system's streams.
   * Cheap and local: asks no server.
   */
  List<String> pipelineOf(OutputStream out);

  /**
   * Creates {@code path} as {@code create(path, overwrite)} would, asking that its blocks be placed
   * on {@code favoredNodes} (names from {@link #pipelineOf}). A hint: the file system may place
   * them elsewhere (a favoured node that is down, full or unknown).
   */
  FSDataOutputStream create(Path path, boolean overwrite, List<String> favoredNodes)
      throws IOException;
}
