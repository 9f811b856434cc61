package io.streamstate.hadoop;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.apache.hadoop.hdfs.server.datanode.DataNode;
import org.apache.hadoop.hdfs.server.datanode.DataNodeFaultInjector;

/**
 * Makes one DataNode of a MiniDFSCluster slow on demand, through Hadoop's test-scope {@link
 * DataNodeFaultInjector} (the hook a DataNode calls per packet): while a DataNode is slow, every
 * packet it receives is held before it is mirrored downstream and before it is written to disk, and
 * every ack it would send upstream is held, whatever its position in a pipeline. A pipeline through
 * it stalls (its writer's {@code hsync} and {@code close} wait) until {@link #release()}; reads and
 * the other DataNodes are not touched.
 *
 * <p>The injector is process-wide (Hadoop keeps one): {@link #install} replaces the current one and
 * {@link #close} puts it back. It tells which DataNode calls it by the calling thread's group: each
 * DataNode runs its xceivers (receiving, mirroring, writing) and packet responders (acks) in a
 * thread group of its own.
 */
public final class SlowDataNodeInjector extends DataNodeFaultInjector implements AutoCloseable {
  private final Map<ThreadGroup, String> addressByGroup;
  private final List<String> dataNodes;
  private final DataNodeFaultInjector previous;
  private final AtomicInteger held = new AtomicInteger();
  private final AtomicLong holds = new AtomicLong();

  /** The transfer address ({@code ip:port}) of the DataNode that is slow now, or null. */
  private volatile String slow; // written under this

  private SlowDataNodeInjector(Map<ThreadGroup, String> addressByGroup, List<String> dataNodes) {
    this.addressByGroup = addressByGroup;
    this.dataNodes = dataNodes;
    this.previous = DataNodeFaultInjector.get();
  }

  /**
   * Installs an injector for every DataNode of {@code cluster} (none slow yet) as the process's
   * DataNode fault injector.
   */
  public static SlowDataNodeInjector install(MiniDFSCluster cluster) {
    Map<ThreadGroup, String> byGroup = new IdentityHashMap<>();
    List<String> addresses = new ArrayList<>();
    for (DataNode dn : cluster.getDataNodes()) {
      String address = dn.getDatanodeId().getXferAddr();
      byGroup.put(threadGroupOf(dn), address);
      addresses.add(address);
    }
    SlowDataNodeInjector injector = new SlowDataNodeInjector(byGroup, List.copyOf(addresses));
    DataNodeFaultInjector.set(injector);
    return injector;
  }

  /** The DataNode's xceiver thread group: its own, so the injector can tell who calls. */
  private static ThreadGroup threadGroupOf(DataNode dn) {
    try {
      Field group = DataNode.class.getDeclaredField("threadGroup");
      group.setAccessible(true);
      return (ThreadGroup) group.get(dn);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("Cannot read the thread group of DataNode " + dn, e);
    }
  }

  /**
   * The transfer addresses ({@code ip:port}, as pipelines name them) of the cluster's DataNodes.
   */
  public List<String> dataNodes() {
    return dataNodes;
  }

  /**
   * Makes the DataNode at transfer address {@code address} slow from now until {@link #release()}
   * (another one that was slow is released first).
   */
  public synchronized void slow(String address) {
    if (!dataNodes.contains(address)) {
      throw new IllegalArgumentException("No DataNode at " + address + " in " + dataNodes);
    }
    slow = address;
    notifyAll();
  }

  /** Lets the slow DataNode go on: every held packet and ack proceeds. */
  public synchronized void release() {
    slow = null;
    notifyAll();
  }

  /** The DataNode that is slow now, if any. */
  public Optional<String> slowDataNode() {
    return Optional.ofNullable(slow);
  }

  /** Threads held now (packets or acks waiting). */
  public int held() {
    return held.get();
  }

  /** Times a packet or ack was held since installation (each hold counted once). */
  public long holds() {
    return holds.get();
  }

  /** Releases the slow DataNode and puts back the injector that was installed before. */
  @Override
  public void close() {
    release();
    DataNodeFaultInjector.set(previous);
  }

  private void hold() {
    if (slow == null) {
      return;
    }
    String caller = addressByGroup.get(Thread.currentThread().getThreadGroup());
    if (caller == null) {
      return;
    }
    synchronized (this) {
      if (!caller.equals(slow)) {
        return;
      }
      held.incrementAndGet();
      holds.incrementAndGet();
      try {
        while (caller.equals(slow)) {
          wait();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      } finally {
        held.decrementAndGet();
      }
    }
  }

  @Override
  public void delay() { // before a flush to disk and before each ack upstream
    hold();
  }

  @Override
  public void delayWriteToDisk() {
    hold();
  }

  @Override
  public void stopSendingPacketDownstream(String mirrorAddr) {
    hold();
  }
}
