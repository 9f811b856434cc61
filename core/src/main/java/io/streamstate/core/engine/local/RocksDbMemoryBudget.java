package io.streamstate.core.engine.local;

import io.streamstate.core.ProcessResources;
import java.util.Map;
import java.util.TreeMap;
import org.rocksdb.Cache;
import org.rocksdb.LRUCache;
import org.rocksdb.WriteBufferManager;

/**
 * One memory budget shared by every RocksDB instance of a process: a block cache of {@code
 * capBytes}, with memtables charged to that same cache through a write buffer manager, so that
 * block cache plus write buffers of all stores together stay near the cap however many store
 * partitions an executor runs.
 *
 * <p>The process-wide instance is {@link #shared}; tests may create private ones.
 */
public final class RocksDbMemoryBudget implements AutoCloseable {
  /** Default cap: 256 MiB for the whole process. */
  public static final long DEFAULT_CAP_BYTES = 256L << 20;

  private final long capBytes;
  private final Cache cache;
  private final WriteBufferManager writeBufferManager;
  private final HeapMirrorBudget heapMirrors;
  private final NativeHeapTrimmer trimmer;

  /** A private budget; the caller closes it after every store using it is closed. */
  public RocksDbMemoryBudget(long capBytes) {
    this(capBytes, -1);
  }

  /**
   * A private budget whose stores' heap mirrors may hold {@code heapMirrorBytes} (-1: {@link
   * #defaultHeapMirrorBytes}; 0: no mirrors); the caller closes it after its stores.
   */
  public RocksDbMemoryBudget(long capBytes, long heapMirrorBytes) {
    this(capBytes, heapMirrorBytes, NativeHeapTrimmer.DEFAULT_MIN_INTERVAL_MS);
  }

  /**
   * A private budget as {@link #RocksDbMemoryBudget(long, long)}, whose stores' freed native memory
   * is given back to the operating system at most once per {@code trimIntervalMs} (0: never; {@link
   * NativeHeapTrimmer}).
   */
  public RocksDbMemoryBudget(long capBytes, long heapMirrorBytes, long trimIntervalMs) {
    RocksDbVersion.check();
    if (capBytes < (8L << 20)) {
      throw new IllegalArgumentException("memory cap must be at least 8 MiB, got " + capBytes);
    }
    this.capBytes = capBytes;
    // Strict limit off: a full cache must slow reads down, never fail them.
    this.cache = new LRUCache(capBytes, -1, false, 0.1);
    // Memtables may take half of the budget; their memory is charged to the same cache.
    this.writeBufferManager = new WriteBufferManager(capBytes / 2, cache);
    this.heapMirrors =
        new HeapMirrorBudget(
            heapMirrorBytes < 0 ? defaultHeapMirrorBytes() : heapMirrorBytes,
            DEFAULT_HEAP_MIRROR_FAMILY_BYTES);
    this.trimmer = new NativeHeapTrimmer(trimIntervalMs);
  }

  /** Default heap one family's mirror may hold: 64 MiB. */
  public static final long DEFAULT_HEAP_MIRROR_FAMILY_BYTES = 64L << 20;

  /** Default heap all mirrors of a process may hold: a tenth of the heap, at most 512 MiB. */
  public static long defaultHeapMirrorBytes() {
    return Math.min(512L << 20, Runtime.getRuntime().maxMemory() / 10);
  }

  /** The heap the process's stores may use for their heap mirrors ({@link HeapMirror}). */
  public HeapMirrorBudget heapMirrors() {
    return heapMirrors;
  }

  /**
   * The process's budget. The first caller fixes the cap; later callers asking for another cap get
   * the existing budget (a process has one budget, whatever each store asks for). Not closed with
   * its owner: open instances of stores use it until they close.
   */
  public static RocksDbMemoryBudget shared(ProcessResources resources, long capBytes) {
    return shared(resources, capBytes, -1);
  }

  /** As {@link #shared(ProcessResources, long)}, the first caller also fixing the heap mirrors'. */
  public static RocksDbMemoryBudget shared(
      ProcessResources resources, long capBytes, long heapMirrorBytes) {
    return shared(resources, capBytes, heapMirrorBytes, NativeHeapTrimmer.DEFAULT_MIN_INTERVAL_MS);
  }

  /**
   * As {@link #shared(ProcessResources, long, long)}, the first caller also fixing the native heap
   * trims' least interval ({@link NativeHeapTrimmer}; 0: none).
   */
  public static RocksDbMemoryBudget shared(
      ProcessResources resources, long capBytes, long heapMirrorBytes, long trimIntervalMs) {
    return resources.component(
            Shared.class,
            () -> new Shared(new RocksDbMemoryBudget(capBytes, heapMirrorBytes, trimIntervalMs)))
        .budget;
  }

  /** The process's budget if a store made it, else null (for metrics: reading makes nothing). */
  public static RocksDbMemoryBudget sharedIfPresent(ProcessResources resources) {
    Shared shared = resources.componentIfPresent(Shared.class);
    return shared == null ? null : shared.budget;
  }

  /** The process's budget as a component of its owner (a holder: the owner must not close it). */
  private record Shared(RocksDbMemoryBudget budget) {}

  public long capBytes() {
    return capBytes;
  }

  Cache cache() {
    return cache;
  }

  /**
   * The memtable size of each column family: small enough that a few stores' memtables fit the
   * write buffer half of the budget (1 MiB to 16 MiB).
   */
  long writeBufferBytes() {
    return Math.max(1L << 20, Math.min(16L << 20, capBytes / 16));
  }

  /** Gives what this budget's stores freed back to the operating system. */
  public NativeHeapTrimmer trimmer() {
    return trimmer;
  }

  WriteBufferManager writeBufferManager() {
    return writeBufferManager;
  }

  /** Bytes the shared cache holds now (blocks plus charged memtables). */
  public long usedBytes() {
    return cache.getUsage();
  }

  /** Bytes of the shared cache pinned by readers now (blocks of open iterators and reads). */
  public long pinnedBytes() {
    return cache.getPinnedUsage();
  }

  /**
   * RocksDB's own account of what this process's stores hold in native memory now, for diagnostics:
   * {@code blockCacheBytes} (the shared budget's cache, memtables charged to it included; absent
   * before the first store opens), {@code blockCachePinnedBytes} (the part in use by readers),
   * {@code memtableBytes} and {@code tableReaderBytes} (summed over every open instance) and {@code
   * openInstances}. What the process's resident set holds beyond this and the JVM's own memory is
   * allocator overhead or memory RocksDB does not count.
   */
  public static Map<String, Long> processUsage(ProcessResources resources) {
    Map<String, Long> m = new TreeMap<>();
    Shared shared = resources.componentIfPresent(Shared.class);
    if (shared != null) {
      m.put("blockCacheBytes", shared.budget.cache.getUsage());
      m.put("blockCachePinnedBytes", shared.budget.cache.getPinnedUsage());
    }
    OpenDatabases open = OpenDatabases.of(resources);
    m.put("memtableBytes", open.sum("rocksdb.size-all-mem-tables"));
    m.put("tableReaderBytes", open.sum("rocksdb.estimate-table-readers-mem"));
    m.put("openInstances", (long) open.count());
    return m;
  }

  @Override
  public void close() {
    trimmer.close();
    writeBufferManager.close();
    cache.close();
  }
}
