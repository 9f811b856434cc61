package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.lang.management.ManagementFactory;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import org.rocksdb.AbstractEventListener;
import org.rocksdb.CompactionJobInfo;
import org.rocksdb.FlushJobInfo;
import org.rocksdb.RocksDB;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Gives the C heap's free memory back to the operating system after RocksDB freed much of it. A
 * flushed memtable, a finished compaction's buffers or a closed instance go back to glibc's malloc,
 * which keeps them in its arenas (one per thread that allocated, up to eight per core) instead of
 * returning them: at 10M keys the batch that evicts a quarter of the state left 919-1,017 MB
 * resident beside the committed heap, 397-736 MB with trims (issue 21 bench, section 29), and only
 * with trims did every run stay within heap + cap + 512 MB. On YARN and Kubernetes the container is
 * killed for that memory, used or not.
 *
 * <p>A trim is HotSpot's {@code System.trim_native_heap} (glibc's {@code malloc_trim}, through the
 * diagnostic command MBean; JDK 17.0.9 and later), run on a thread of its own at most once per
 * {@code minIntervalMs} after RocksDB {@linkplain #listener() reports} a flush or a compaction, or
 * an instance closes. It holds each arena's lock while it walks it, so allocations on other threads
 * wait that long (a few ms; up to 374 ms seen at 2-3 GB resident); nothing else changes. Off where
 * the JVM has no such command (another allocator, an older JVM) or trims by itself ({@code
 * -XX:TrimNativeHeapInterval}).
 */
public final class NativeHeapTrimmer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NativeHeapTrimmer.class);

  /** Default least time between two trims. */
  public static final long DEFAULT_MIN_INTERVAL_MS = 1000;

  private static final String COMMAND = "systemTrimNativeHeap";

  private final long minIntervalNanos;
  private final MBeanServer server;
  private final ObjectName diagnostics;
  private final ScheduledExecutorService thread;
  private final AtomicBoolean scheduled = new AtomicBoolean();
  private final AtomicLong trims = new AtomicLong();
  private final AtomicLong trimNanos = new AtomicLong();
  private volatile long lastTrimNanos = System.nanoTime();
  private final Listener listener;

  /**
   * A trimmer that trims at most once per {@code minIntervalMs} (0: never, as where the JVM cannot
   * trim).
   */
  public NativeHeapTrimmer(long minIntervalMs) {
    if (minIntervalMs < 0) {
      throw new IllegalArgumentException("trim interval must be >= 0 ms, got " + minIntervalMs);
    }
    this.minIntervalNanos = TimeUnit.MILLISECONDS.toNanos(minIntervalMs);
    ObjectName name = minIntervalMs > 0 ? trimCommand() : null;
    this.diagnostics = name;
    this.server = name == null ? null : ManagementFactory.getPlatformMBeanServer();
    this.thread = name == null ? null : newThread();
    this.listener = new Listener(this);
  }

  /** The least time between two trims, as configured (0: never). */
  public long minIntervalMs() {
    return TimeUnit.NANOSECONDS.toMillis(minIntervalNanos);
  }

  /** Whether this trimmer trims at all. */
  public boolean enabled() {
    return diagnostics != null;
  }

  /** Trims done so far. */
  public long trims() {
    return trims.get();
  }

  /** Time spent trimming so far, in nanoseconds. */
  public long trimNanos() {
    return trimNanos.get();
  }

  /**
   * Asks for a trim: runs one on the trimmer's thread unless one is due already, no sooner than
   * {@code minIntervalMs} after the last. Cheap; any thread.
   */
  void request() {
    if (thread == null || !scheduled.compareAndSet(false, true)) {
      return;
    }
    long wait = Math.max(0, lastTrimNanos + minIntervalNanos - System.nanoTime());
    try {
      thread.schedule(this::trim, wait, TimeUnit.NANOSECONDS);
    } catch (RuntimeException e) { // closed
      scheduled.set(false);
    }
  }

  /** What a RocksDB instance reports its flushes and compactions to (its options' listeners). */
  AbstractEventListener listener() {
    return listener;
  }

  private void trim() {
    scheduled.set(false); // a request from now on schedules the next one
    long start = System.nanoTime();
    try {
      Object outcome =
          server.invoke(
              diagnostics, COMMAND, new Object[] {null}, new String[] {String[].class.getName()});
      long took = System.nanoTime() - start;
      trims.incrementAndGet();
      trimNanos.addAndGet(took);
      LOG.debug("Trimmed the native heap in {} us: {}", took / 1000, outcome);
    } catch (Exception e) {
      LOG.debug("Trimming the native heap failed", e);
    } finally {
      lastTrimNanos = System.nanoTime();
    }
  }

  @Override
  public void close() {
    if (thread != null) {
      thread.shutdownNow();
    }
    listener.close();
  }

  /**
   * The diagnostic command's MBean where the JVM has the command and does not trim by itself; else
   * null.
   */
  private static ObjectName trimCommand() {
    try {
      ObjectName name = new ObjectName("com.sun.management:type=DiagnosticCommand");
      MBeanServer server = ManagementFactory.getPlatformMBeanServer();
      boolean has = false;
      for (var op : server.getMBeanInfo(name).getOperations()) {
        has |= op.getName().equals(COMMAND);
      }
      if (!has || jvmTrims()) {
        return null;
      }
      return name;
    } catch (Exception | LinkageError e) {
      LOG.debug("No native heap trimming: {}", e.toString());
      return null;
    }
  }

  /** Whether the JVM trims by itself ({@code -XX:TrimNativeHeapInterval} set above 0). */
  private static boolean jvmTrims() {
    try {
      var hotspot =
          ManagementFactory.getPlatformMXBean(com.sun.management.HotSpotDiagnosticMXBean.class);
      String interval = hotspot.getVMOption("TrimNativeHeapInterval").getValue();
      return Long.parseLong(interval) > 0;
    } catch (RuntimeException | LinkageError e) {
      return false; // no such flag (a JVM before it)
    }
  }

  private static ScheduledExecutorService newThread() {
    ScheduledThreadPoolExecutor executor =
        new ScheduledThreadPoolExecutor(1, ProcessResources.daemonThreads("streamstate-trim-"));
    executor.setRemoveOnCancelPolicy(true);
    // Idle, the thread ends: a budget nobody closes (a test's process) leaves no thread behind.
    executor.setKeepAliveTime(30, TimeUnit.SECONDS);
    executor.allowCoreThreadTimeOut(true);
    return executor;
  }

  /** Asks for a trim after each flush and compaction of the instances it is attached to. */
  private static final class Listener extends AbstractEventListener {
    private final NativeHeapTrimmer trimmer;

    Listener(NativeHeapTrimmer trimmer) {
      super(EnabledEventCallback.ON_FLUSH_COMPLETED, EnabledEventCallback.ON_COMPACTION_COMPLETED);
      this.trimmer = trimmer;
    }

    @Override
    public void onFlushCompleted(RocksDB db, FlushJobInfo info) {
      trimmer.request();
    }

    @Override
    public void onCompactionCompleted(RocksDB db, CompactionJobInfo info) {
      trimmer.request();
    }
  }
}
