package io.streamstate.hadoop;

import java.io.IOException;
import java.io.OutputStream;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.StreamCapabilities;
import org.apache.hadoop.fs.Syncable;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * {@link ExclusiveCreateLocalFileSystem} with DataNode pipelines, as strict as {@link
 * SupportsDataNodePipelines} promises and no more helpful: six DataNodes {@code dn1:9866} ...
 * {@code dn6:9866}, replication 3; each file gets its pipeline at create (the favoured nodes first,
 * then random others, or the one {@link #nextPipeline} set) and keeps it; {@link #pipelineOf} shows
 * it only once the first byte went out (an {@code hflush}/{@code hsync}, or 64 KiB written), never
 * after close, and never for another file system's stream; {@link #create(Path, boolean, List)}
 * refuses a name it never gave out. A slow DataNode ({@link #slow}) holds every {@code hsync} and
 * {@code close} of a pipeline through it until {@link #release}; {@code close} holds the stream
 * (its lock) while it waits, as HDFS's does, so {@code pipelineOf} waits then too.
 */
public class PipelineFileSystem extends ExclusiveCreateLocalFileSystem
    implements SupportsDataNodePipelines {
  public static final List<String> NODES =
      List.of("dn1:9866", "dn2:9866", "dn3:9866", "dn4:9866", "dn5:9866", "dn6:9866");
  public static final short REPLICATION = 3;

  private final Random random = new Random(42);
  private final Set<String> slow = ConcurrentHashMap.newKeySet();
  private final Set<String> slowCloses = ConcurrentHashMap.newKeySet();
  private final Object slowLock = new Object();
  private int held; // guarded by slowLock

  /** Pipeline of each file at its create, by path (what the "NameNode" chose). */
  private final Map<String, List<String>> placed = new ConcurrentHashMap<>();

  /** Favoured nodes asked for, by path. */
  private final Map<String, List<String>> favoredAsked = new ConcurrentHashMap<>();

  private final ThreadLocal<List<String>> favoredForCreate = new ThreadLocal<>();
  private volatile List<String> next;

  /** The next create without favoured nodes gets {@code pipeline} (the NameNode's choice). */
  public void nextPipeline(String... pipeline) {
    next = List.of(pipeline);
  }

  /** Where the file at {@code path} was placed. */
  public List<String> placed(Path path) {
    return placed.get(makeQualified(path).toUri().getPath());
  }

  /** The favoured nodes its create asked for, or null if none. */
  public List<String> favoredAsked(Path path) {
    return favoredAsked.get(makeQualified(path).toUri().getPath());
  }

  /** The streams not yet closed, for {@link #fail}. */
  private final Set<PipelinedStream> open = ConcurrentHashMap.newKeySet();

  /**
   * {@code node} fails, as a killed DataNode does on HDFS: every open stream through it recovers
   * its pipeline at once (the node is replaced by one not in it, as HDFS's default replacement
   * policy does with DataNodes to spare), and no new file is placed on it.
   */
  public void fail(String node) {
    failed.add(node);
    for (PipelinedStream stream : open) {
      stream.replace(node);
    }
  }

  private final Set<String> failed = ConcurrentHashMap.newKeySet();

  /** Makes {@code node} slow: every sync and close through it waits until {@link #release}. */
  public void slow(String node) {
    slow.add(node);
  }

  /** Makes {@code node} slow for the last packet only: closes through it wait, syncs do not. */
  public void slowCloses(String node) {
    slowCloses.add(node);
  }

  /** Ends every slowness; held writes go on. */
  public void release() {
    synchronized (slowLock) {
      slow.clear();
      slowCloses.clear();
      slowLock.notifyAll();
    }
  }

  /** Syncs and closes waiting on a slow DataNode now. */
  public int held() {
    synchronized (slowLock) {
      return held;
    }
  }

  private void awaitNotSlow(List<String> pipeline, boolean closing) throws IOException {
    synchronized (slowLock) {
      boolean counted = false;
      try {
        while (pipeline.stream()
            .anyMatch(n -> slow.contains(n) || closing && slowCloses.contains(n))) {
          if (!counted) {
            held++;
            counted = true;
          }
          slowLock.wait();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new java.io.InterruptedIOException("interrupted while a DataNode is slow");
      } finally {
        if (counted) {
          held--;
        }
      }
    }
  }

  @Override
  public short getDefaultReplication(Path path) {
    return REPLICATION;
  }

  @Override
  public FSDataOutputStream create(
      Path f,
      FsPermission permission,
      boolean overwrite,
      int bufferSize,
      short replication,
      long blockSize,
      Progressable progress)
      throws IOException {
    FSDataOutputStream inner =
        super.create(f, permission, overwrite, bufferSize, replication, blockSize, progress);
    List<String> favored = favoredForCreate.get();
    List<String> pipeline = new ArrayList<>();
    if (favored != null) {
      for (String node : favored) {
        if (pipeline.size() < REPLICATION && !pipeline.contains(node)) {
          pipeline.add(node);
        }
      }
    } else if (next != null) {
      pipeline.addAll(next);
      next = null;
    }
    pipeline.removeAll(failed); // the client excludes a DataNode it cannot reach
    List<String> others = new ArrayList<>(NODES);
    others.removeAll(pipeline);
    others.removeAll(failed);
    synchronized (random) {
      Collections.shuffle(others, random);
    }
    while (pipeline.size() < REPLICATION) {
      pipeline.add(others.remove(0));
    }
    String key = makeQualified(f).toUri().getPath();
    placed.put(key, List.copyOf(pipeline));
    if (favored != null) {
      favoredAsked.put(key, List.copyOf(favored));
    }
    PipelinedStream stream = new PipelinedStream(inner, List.copyOf(pipeline));
    open.add(stream);
    return new FSDataOutputStream(stream, null);
  }

  @Override
  public List<String> pipelineOf(OutputStream out) {
    if (out instanceof FSDataOutputStream wrapper
        && wrapper.getWrappedStream() instanceof PipelinedStream stream
        && stream.owner() == this) {
      return stream.pipeline();
    }
    return List.of();
  }

  @Override
  public FSDataOutputStream create(Path path, boolean overwrite, List<String> favoredNodes)
      throws IOException {
    Set<String> unknown = new HashSet<>(favoredNodes);
    unknown.removeAll(NODES);
    if (!unknown.isEmpty()) {
      throw new IllegalArgumentException("Not DataNodes of this file system: " + unknown);
    }
    favoredForCreate.set(favoredNodes);
    try {
      return create(path, overwrite);
    } finally {
      favoredForCreate.remove();
    }
  }

  /** A stream through a pipeline; its lock is what HDFS's stream lock is. */
  private final class PipelinedStream extends OutputStream implements Syncable, StreamCapabilities {
    private final FSDataOutputStream inner;
    private volatile List<String> nodes;
    private long written;
    private volatile boolean sent;
    private volatile boolean closed;

    PipelinedStream(FSDataOutputStream inner, List<String> nodes) {
      this.inner = inner;
      this.nodes = nodes;
    }

    PipelineFileSystem owner() {
      return PipelineFileSystem.this;
    }

    synchronized List<String> pipeline() {
      return sent && !closed ? nodes : List.of();
    }

    /** Pipeline recovery: {@code node} out, a node of the cluster not in the pipeline in. */
    synchronized void replace(String node) {
      if (!nodes.contains(node)) {
        return;
      }
      List<String> recovered = new ArrayList<>(nodes);
      recovered.remove(node);
      for (String candidate : NODES) {
        if (!recovered.contains(candidate) && !failed.contains(candidate)) {
          recovered.add(candidate);
          break;
        }
      }
      nodes = List.copyOf(recovered);
    }

    @Override
    public synchronized void write(int b) throws IOException {
      write(new byte[] {(byte) b}, 0, 1);
    }

    @Override
    public synchronized void write(byte[] b, int off, int len) throws IOException {
      inner.write(b, off, len);
      written += len;
      if (written >= 64 << 10) {
        sent = true;
      }
    }

    /** Not synchronized while it waits: HDFS's hsync waits for acks without the stream lock. */
    @Override
    public void hflush() throws IOException {
      sent = true;
      awaitNotSlow(nodes, false);
      inner.hflush();
    }

    @Override
    public void hsync() throws IOException {
      sent = true;
      awaitNotSlow(nodes, false);
      inner.hsync();
    }

    /** Holds the stream while it waits, as HDFS's close does. */
    @Override
    public synchronized void close() throws IOException {
      if (closed) {
        return;
      }
      if (written > 0) {
        sent = true;
        awaitNotSlow(nodes, true);
      }
      closed = true;
      open.remove(this);
      inner.close();
    }

    @Override
    public boolean hasCapability(String capability) {
      return inner.hasCapability(capability);
    }
  }
}
