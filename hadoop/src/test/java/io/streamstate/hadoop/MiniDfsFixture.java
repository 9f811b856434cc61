package io.streamstate.hadoop;

import java.io.IOException;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * An in-process MiniDFSCluster, with one DataNode unless asked for more, for the HDFS integration
 * tests: one per test class (about 12 s to start with one DataNode).
 */
public final class MiniDfsFixture implements AutoCloseable {
  private final MiniDFSCluster cluster;
  private final FileSystem fs;

  private MiniDfsFixture(MiniDFSCluster cluster) throws IOException {
    this.cluster = cluster;
    this.fs = cluster.getFileSystem();
  }

  /** Starts a cluster keeping its NameNode and DataNode directories under {@code baseDir}. */
  public static MiniDfsFixture start(java.nio.file.Path baseDir) throws IOException {
    return start(baseDir, 1);
  }

  /**
   * Starts a cluster of {@code dataNodes} DataNodes (all on this host, one rack), with files
   * replicated {@code min(3, dataNodes)} times, HDFS's default where it fits.
   */
  public static MiniDfsFixture start(java.nio.file.Path baseDir, int dataNodes) throws IOException {
    return start(baseDir, dataNodes, Map.of());
  }

  /**
   * Like {@link #start(java.nio.file.Path, int)}, with {@code settings} added to the cluster's
   * configuration, which its own client ({@link #fileSystem()}, also the one Hadoop's file system
   * cache hands to other callers in this process) carries too: client settings such as {@code
   * streamstate.datanode.suspectMs}.
   */
  public static MiniDfsFixture start(
      java.nio.file.Path baseDir, int dataNodes, Map<String, String> settings) throws IOException {
    Configuration conf = new Configuration();
    if (dataNodes > 1) {
      conf.setInt("dfs.replication", Math.min(3, dataNodes));
    }
    conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, baseDir.toString());
    // close() polls the NameNode until the last block is reported, first after 400 ms: with one
    // local DataNode the report arrives within milliseconds.
    conf.setInt("dfs.client.block.write.locateFollowingBlock.initial.delay.ms", 20);
    settings.forEach(conf::set);
    MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf).numDataNodes(dataNodes).build();
    try {
      cluster.waitActive();
      return new MiniDfsFixture(cluster);
    } catch (IOException | RuntimeException e) {
      cluster.shutdown();
      throw e;
    }
  }

  /** The cluster's own client, shared by the tests of a class; closed with the cluster. */
  public FileSystem fileSystem() {
    return fs;
  }

  /**
   * A client of its own (its own DFSClient, so its own lease holder), as a second executor would
   * have. The caller closes it.
   */
  public FileSystem newClient() throws IOException {
    return FileSystem.newInstance(fs.getUri(), fs.getConf());
  }

  /** The cluster itself (for its NameNode's metrics, say). */
  public MiniDFSCluster cluster() {
    return cluster;
  }

  /** {@code path} (absolute) on this cluster, qualified with its {@code hdfs://} authority. */
  public Path path(String path) {
    return fs.makeQualified(new Path(path));
  }

  @Override
  public void close() {
    cluster.shutdown();
  }
}
