package io.streamstate.core;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one owner of what the stores, writers and checkpoint managers of one process share: thread
 * pools, and registries of shared objects (group committers, segment catalogs, hedgers, open
 * databases, the RocksDB memory budget, log journals). Nothing else in the project keeps mutable
 * static state; a class that needs a shared object asks its owner for it.
 *
 * <p>Spark creates providers and checkpoint file managers by class name, so those entry points
 * reach the process's owner through {@link #shared()} and pass it down; everything below them takes
 * it as a parameter. A test that wants a fresh process gets one from {@link #restartForTests}.
 *
 * <p>A registry is a <em>component</em>: one instance per type, made on first use ({@link
 * #component}); this class knows nothing of the types it holds, so it depends on no other package
 * (model: Flink's shared resources of a memory manager).
 */
public final class ProcessResources implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ProcessResources.class);

  private static final Object SHARED_LOCK = new Object();

  /** The process's owner; replaced only by {@link #restartForTests}. */
  private static ProcessResources shared = new ProcessResources("streamstate");

  private final String threadPrefix;
  private final Map<String, ExecutorService> pools = new LinkedHashMap<>();
  private final Map<Class<?>, Object> components = new LinkedHashMap<>();
  private boolean closed;

  /**
   * An owner apart from the process's: for embedding several independent engines in one JVM and for
   * tests. Close it when done.
   *
   * @param threadPrefix the start of every thread name of its pools ({@code streamstate} for the
   *     process's owner)
   */
  public ProcessResources(String threadPrefix) {
    this.threadPrefix = threadPrefix;
  }

  /** The owner of this process's shared resources. */
  public static ProcessResources shared() {
    synchronized (SHARED_LOCK) {
      return shared;
    }
  }

  /**
   * Tests only: makes what a restarted process would see. The old owner's objects either die with
   * it ({@code closeOld}: pools stopped, closeable components closed, as when the process is
   * killed) or live on unreachable from the new owner (another process that is still running).
   *
   * @return the new owner
   */
  public static ProcessResources restartForTests(boolean closeOld) {
    ProcessResources old;
    ProcessResources fresh = new ProcessResources("streamstate");
    synchronized (SHARED_LOCK) {
      old = shared;
      shared = fresh;
    }
    if (closeOld) {
      old.close();
    }
    return fresh;
  }

  /**
   * A cached pool of daemon threads named {@code <prefix>-<name>-<n>}, one per name: for work that
   * blocks on storage, so it grows as needed and idle threads leave after a minute. Daemon threads
   * never keep a JVM alive.
   */
  public ExecutorService cachedPool(String name) {
    synchronized (this) {
      checkOpen();
      return pools.computeIfAbsent(
          name, n -> Executors.newCachedThreadPool(daemonThreads(threadPrefix + "-" + n + "-")));
    }
  }

  /**
   * A pool of at most {@code threads} daemon threads with an unbounded queue, one per name (the
   * first caller's size holds); idle threads leave after a minute.
   */
  public ThreadPoolExecutor boundedPool(String name, int threads) {
    synchronized (this) {
      checkOpen();
      return (ThreadPoolExecutor)
          pools.computeIfAbsent(
              name,
              n -> {
                ThreadPoolExecutor pool =
                    new ThreadPoolExecutor(
                        threads,
                        threads,
                        60,
                        TimeUnit.SECONDS,
                        new LinkedBlockingQueue<>(),
                        daemonThreads(threadPrefix + "-" + n + "-"));
                pool.allowCoreThreadTimeOut(true);
                return pool;
              });
    }
  }

  /**
   * The one instance of {@code type} this owner holds, made by {@code create} on first use. If it
   * is {@link AutoCloseable}, {@link #close()} closes it.
   */
  public <T> T component(Class<T> type, Supplier<? extends T> create) {
    synchronized (this) {
      checkOpen();
      Object existing = components.get(type);
      if (existing == null) {
        existing = create.get();
        components.put(type, existing);
      }
      return type.cast(existing);
    }
  }

  /** The instance of {@code type} if one was made, else null. */
  public <T> T componentIfPresent(Class<T> type) {
    synchronized (this) {
      return type.cast(components.get(type));
    }
  }

  /**
   * Closes the closeable components (last made first) and stops the pools; running work is
   * interrupted. The process's owner is closed only by {@link #restartForTests}.
   */
  @Override
  public void close() {
    List<Object> toClose;
    List<ExecutorService> toStop;
    synchronized (this) {
      if (closed) {
        return;
      }
      closed = true;
      toClose = new ArrayList<>(components.values());
      Collections.reverse(toClose);
      toStop = new ArrayList<>(pools.values());
    }
    for (Object c : toClose) {
      if (c instanceof AutoCloseable closeable) {
        try {
          closeable.close();
        } catch (Exception e) {
          LOG.warn("Closing {} failed", c.getClass().getSimpleName(), e);
        }
      }
    }
    for (ExecutorService pool : toStop) {
      pool.shutdownNow();
    }
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("these process resources are closed");
    }
  }

  /**
   * A pool that runs each task at once on a thread of its own (a new one when none is idle; idle
   * ones end after a minute): for work a caller waits for, so that it never queues behind another
   * store's. Daemon threads named {@code namePrefix} and a number.
   */
  public static ExecutorService threadPerTask(String namePrefix) {
    return new ThreadPoolExecutor(
        0,
        Integer.MAX_VALUE,
        60,
        TimeUnit.SECONDS,
        new SynchronousQueue<>(),
        daemonThreads(namePrefix));
  }

  /** Daemon threads named {@code namePrefix} and a number counting from 1. */
  public static ThreadFactory daemonThreads(String namePrefix) {
    AtomicInteger count = new AtomicInteger();
    return task -> {
      Thread t = new Thread(task, namePrefix + count.incrementAndGet());
      t.setDaemon(true); // never keeps a JVM alive
      return t;
    };
  }
}
