package io.streamstate.bench.spark;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import java.io.IOException;
import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.HashMap;
import java.util.Map;

/**
 * Heap mode's memory samples of this JVM, under the per-batch CSV's column names: heap after a
 * forced full GC, committed heap and non-heap, direct buffers, the process's resident set from
 * {@code /proc/self/status}, and RocksDB's own account.
 */
final class MemorySampler {
  private MemorySampler() {}

  /**
   * Forces a full GC ({@code System.gc()}; G1 collects fully unless told otherwise) and reads the
   * heap used after it and the process's resident set ({@code VmRSS} of /proc/self/status: heap,
   * RocksDB's native memory, code, threads, everything). The JVM's committed heap and non-heap
   * (metaspace, code cache) are recorded too: what the resident set holds beyond them is native
   * memory the JVM does not manage, RocksDB's among it.
   */
  static Map<String, Object> sample() {
    Map<String, Object> m = new HashMap<>();
    MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
    // Before the forced GC: the heap the running batch has made G1 commit. After a full GC G1
    // reports a shrunk committed heap at once but gives the pages back later (uncommit runs
    // concurrently), so the resident set sampled next still holds them: read against the
    // committed heap after the GC alone, they looked like native memory nobody accounted for.
    m.put("heapCommittedBeforeGcMb", memory.getHeapMemoryUsage().getCommitted() >> 20);
    m.put("rssBeforeGcMb", residentSetKb() >> 10);
    System.gc();
    m.put("heapAfterGcMb", memory.getHeapMemoryUsage().getUsed() >> 20);
    m.put("heapCommittedMb", memory.getHeapMemoryUsage().getCommitted() >> 20);
    m.put("nonHeapCommittedMb", memory.getNonHeapMemoryUsage().getCommitted() >> 20);
    m.put("rssMb", residentSetKb() >> 10);
    m.put("rssAnonMb", statusKb("RssAnon:") >> 10);
    m.put("rssFileMb", statusKb("RssFile:") >> 10);
    long direct = 0;
    for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
      direct += pool.getName().equals("direct") ? pool.getMemoryUsed() : 0;
    }
    m.put("directBufferMb", direct >> 20);
    // RocksDB's own account (zero for the built-in providers, which open no RocksDB of ours).
    Map<String, Long> rocks = RocksDbMemoryBudget.processUsage(ProcessResources.shared());
    m.put("rocksdbCacheMb", rocks.getOrDefault("blockCacheBytes", 0L) >> 20);
    m.put("rocksdbPinnedMb", rocks.getOrDefault("blockCachePinnedBytes", 0L) >> 20);
    m.put("rocksdbMemtableMb", rocks.getOrDefault("memtableBytes", 0L) >> 20);
    m.put("rocksdbTableReaderMb", rocks.getOrDefault("tableReaderBytes", 0L) >> 20);
    return m;
  }

  /** {@code VmRSS} in kB, or -1 where /proc is not there. */
  static long residentSetKb() {
    return statusKb("VmRSS:");
  }

  /** A kB field of /proc/self/status ({@code VmRSS:}, {@code RssAnon:}), or -1. */
  static long statusKb(String field) {
    try {
      for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
        if (line.startsWith(field)) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException | NumberFormatException e) {
      // not Linux
    }
    return -1;
  }
}
