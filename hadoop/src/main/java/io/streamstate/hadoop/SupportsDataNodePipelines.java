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
 * system (a simulation of HDFS, for example) implements it directly, and then its own
 * implementation is used, even if it is a {@code DistributedFileSystem}. DataNodes are named by
 * strings the file system chooses (HDFS: {@code ip:xferPort}, {@code DatanodeInfo#getXferAddr()});
 * a name returned by {@link #pipelineOf} is accepted by {@link #create}.
 *
 * <p>What streamstate does with it: {@link DataNodePlacement} and {@link SlowDataNodes}
 * (docs/protocol.md, "Slow DataNodes").
 */
public interface SupportsDataNodePipelines {

  /**
   * The DataNodes {@code out} (a stream this file system created, as returned by its {@code
   * create}) writes through now, first to last; empty if it has none yet (no block allocated: HDFS
   * does that at the first packet, so after the first {@code hflush}/{@code hsync} or 64 KiB), if
   * it is closed, or if it is not one of this file system's streams. Cheap and local: asks no
   * server. It may wait while another thread is inside a call on {@code out} that holds the stream
   * (HDFS: {@code close}, or a {@code write} waiting for room in the send queue), never while the
   * writer waits in {@code hsync}; streamstate calls it from the writer's thread, or from another
   * with a bounded wait.
   */
  List<String> pipelineOf(OutputStream out);

  /**
   * Creates {@code path} as {@code create(path, overwrite)} would (missing parent directories are
   * made; with {@code overwrite} false it is as atomic a create-if-absent as that, which {@link
   * HadoopStorage} relies on), asking that its blocks be placed on {@code favoredNodes} (names from
   * {@link #pipelineOf}, as many as the file's replication, or fewer: the file system picks the
   * rest). A hint: the file system may place them elsewhere (a favoured node that is down, full or
   * unknown).
   */
  FSDataOutputStream create(Path path, boolean overwrite, List<String> favoredNodes)
      throws IOException;
}
