package io.streamstate.hadoop;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.crypto.CryptoOutputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.DFSOutputStream;
import org.apache.hadoop.hdfs.DFSStripedOutputStream;
import org.apache.hadoop.hdfs.DistributedFileSystem;
import org.apache.hadoop.hdfs.protocol.DatanodeInfo;

/**
 * {@link SupportsDataNodePipelines} for HDFS, through the client's public API: the pipeline of an
 * open stream is {@code DFSOutputStream.getPipeline()} (the DataNodes of the block being written,
 * set when the client allocates the block, at its first packet), each named by its transfer address
 * {@code ip:port}; a file is created on favoured DataNodes with {@code createFile(path)...
 * favoredNodes(...)}, which the NameNode honours for every block of the file while those nodes are
 * alive and have space.
 *
 * <p>{@code getPipeline()} takes the stream's lock, which its writer holds through {@code close()}
 * and through a {@code write} waiting for room in the send queue: {@link #pipelineOf} then waits
 * ({@link DataNodePlacement} asks from the writer's thread, or from another with a bounded wait).
 *
 * <p>Loaded only for a {@code DistributedFileSystem} (by name, first), so that this module still
 * loads where HDFS's client classes are absent.
 */
final class HdfsDataNodePipelines implements SupportsDataNodePipelines {
  private final DistributedFileSystem dfs;

  private HdfsDataNodePipelines(DistributedFileSystem dfs) {
    this.dfs = dfs;
  }

  /** The pipelines of {@code fs}, which must be a {@code DistributedFileSystem}. */
  static SupportsDataNodePipelines of(FileSystem fs) {
    return new HdfsDataNodePipelines((DistributedFileSystem) fs);
  }

  @Override
  public List<String> pipelineOf(OutputStream out) {
    OutputStream stream = out;
    // HdfsDataOutputStream > (CryptoOutputStream in an encryption zone >) DFSOutputStream
    for (int depth = 0; depth < 4; depth++) {
      if (stream instanceof DFSStripedOutputStream) {
        return List.of(); // erasure coded: no one pipeline
      }
      if (stream instanceof DFSOutputStream dfsOut) {
        DatanodeInfo[] nodes = dfsOut.getPipeline();
        if (nodes == null || nodes.length == 0) {
          return List.of();
        }
        List<String> names = new ArrayList<>(nodes.length);
        for (DatanodeInfo node : nodes) {
          names.add(node.getXferAddr());
        }
        return List.copyOf(names);
      }
      if (stream instanceof FSDataOutputStream wrapper) {
        stream = wrapper.getWrappedStream();
      } else if (stream instanceof CryptoOutputStream crypto) {
        stream = crypto.getWrappedStream();
      } else {
        return List.of();
      }
    }
    return List.of();
  }

  @Override
  public FSDataOutputStream create(Path path, boolean overwrite, List<String> favoredNodes)
      throws IOException {
    InetSocketAddress[] nodes = new InetSocketAddress[favoredNodes.size()];
    for (int i = 0; i < nodes.length; i++) {
      nodes[i] = address(favoredNodes.get(i));
    }
    // As create(path, overwrite): parents made, defaults for the rest (createFile overwrites
    // unless told not to).
    return dfs.createFile(path).overwrite(overwrite).recursive().favoredNodes(nodes).build();
  }

  /**
   * {@code ip:port} (or {@code [ipv6]:port}) as an unresolved address: the client sends its host
   * string and port to the NameNode as they are, so no name lookup is made here.
   */
  private static InetSocketAddress address(String node) {
    int colon = node.lastIndexOf(':');
    if (colon <= 0 || colon == node.length() - 1) {
      throw new IllegalArgumentException("Not a DataNode transfer address: " + node);
    }
    String host = node.substring(0, colon);
    if (host.startsWith("[") && host.endsWith("]")) {
      host = host.substring(1, host.length() - 1);
    }
    return InetSocketAddress.createUnresolved(host, Integer.parseInt(node.substring(colon + 1)));
  }
}
