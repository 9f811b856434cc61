package io.streamstate.bench;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The per-row path of the side-by-side benchmark's window-agg query on one store partition, without
 * Spark: each batch reads every key it brings (all new, so the reads miss), puts them, then scans
 * the whole state from the start and deletes the expired windows (Spark's eviction), and commits;
 * maintenance (snapshot) every third batch. Prints the task thread's CPU time per batch and per
 * phase (median over batches 2+), which a busy machine disturbs less than wall time, and the
 * commit's wall time (it waits for the local apply on another thread).
 *
 * <p>Run: {@code java -cp <core classes + rocksdbjni + slf4j + bench classes>
 * io.streamstate.bench.RowPathHarness SHOPS ROWS_PER_BATCH BATCHES [new|old [spark-keys]]}; {@code
 * new} counts rows with {@code putAndCheckExisted}/{@code deleteAndCheckExisted}, else with {@code
 * exists} then {@code put}/{@code delete}; {@code spark-keys} lays keys out as Spark's UnsafeRow
 * keys are (little-endian, the window after the shop), so that the eviction's keys lie scattered in
 * key order as in Spark, not in one range (docs/bench/2026-12-03-issue21.md, section 17: a shortcut
 * that needed contiguous evictions looked good here and lost in Spark). E.g. {@code 12500 5000 80
 * new spark-keys} (100k keys over 4 partitions). Temporary files are left in the temp directory.
 */
public class RowPathHarness {
  /**
   * Spark's layout when {@link #sparkKeys}: an UnsafeRow of (shop, window) as its bytes, numbers
   * little-endian, so an eviction's keys lie scattered in key order as in Spark. Else the window
   * first and big-endian: an eviction deletes the smallest keys, a contiguous range.
   */
  static boolean sparkKeys;

  static byte[] key(long window, long shop) {
    ByteBuffer b = ByteBuffer.allocate(49);
    if (sparkKeys) {
      b.order(ByteOrder.LITTLE_ENDIAN).put((byte) 0).putLong(shop).putLong(window);
      b.putLong(window + 60000);
    } else {
      b.put((byte) 0).putLong(window).putLong(window + 60000).putLong(shop);
    }
    return b.array();
  }

  static long windowOf(byte[] k) {
    return sparkKeys
        ? ByteBuffer.wrap(k, 9, 8).order(ByteOrder.LITTLE_ENDIAN).getLong()
        : ByteBuffer.wrap(k, 1, 8).getLong();
  }

  public static void main(String[] a) throws Exception {
    long shops = Long.parseLong(a[0]);
    long rows = Long.parseLong(a[1]);
    int batches = Integer.parseInt(a[2]);
    boolean newApi = a.length > 3 && a[3].equals("new");
    sparkKeys = a.length > 4 && a[4].equals("spark-keys");
    Path dir = Files.createTempDirectory("rowpath");
    ThreadMXBean mx = ManagementFactory.getThreadMXBean();
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(256L << 20);
        VersionedStore store =
            VersionedStore.builder("rp", new LocalStorage(dir.resolve("durable")))
                .localDir(dir.resolve("local"))
                .options(StoreOptions.defaults())
                .memoryBudget(budget)
                .open()) {
      long version = 0, count = 0;
      long[] cpu = new long[batches], wall = new long[batches], commitWall = new long[batches];
      long[][] ph = new long[4][batches];
      byte[] value = new byte[25];
      for (int b = 0; b < batches; b++) {
        long c0 = mx.getCurrentThreadCpuTime(), w0 = System.nanoTime();
        StateTransaction tx = store.begin(version);
        long maxWindow = 0;
        List<byte[]> keys = new ArrayList<>();
        for (long r = b * rows; r < b * rows + rows; r++) {
          long window = (r / shops) * 60000;
          maxWindow = Math.max(maxWindow, window);
          byte[] k = key(window, r % shops);
          keys.add(k);
          byte[] old = tx.get("default", k);
          if (old != null) value[1]++;
        }
        ph[0][b] = mx.getCurrentThreadCpuTime() - c0;
        for (byte[] k : keys) {
          value[0]++;
          if (newApi) {
            if (!tx.putAndCheckExisted("default", k, value)) count++;
          } else {
            if (!tx.exists("default", k)) count++;
            tx.put("default", k, value);
          }
        }
        ph[1][b] = mx.getCurrentThreadCpuTime() - c0;
        long watermark = maxWindow - 60000;
        try (CloseableIterator<KeyValue> it = tx.iterator("default")) {
          while (it.hasNext()) {
            KeyValue kv = it.next();
            byte[] k = kv.key().clone();
            if (windowOf(k) < watermark) {
              if (newApi) {
                if (tx.deleteAndCheckExisted("default", k)) count--;
              } else {
                if (tx.exists("default", k)) count--;
                tx.delete("default", k);
              }
            }
          }
        }
        ph[2][b] = mx.getCurrentThreadCpuTime() - c0;
        long cw0 = System.nanoTime();
        version = tx.commit();
        commitWall[b] = System.nanoTime() - cw0;
        ph[3][b] = mx.getCurrentThreadCpuTime() - c0;
        cpu[b] = mx.getCurrentThreadCpuTime() - c0;
        wall[b] = System.nanoTime() - w0;
        if (b % 3 == 2) store.maintain();
      }
      long[] c = Arrays.copyOfRange(cpu, 2, batches), w = Arrays.copyOfRange(wall, 2, batches);
      Arrays.sort(c);
      Arrays.sort(w);
      long[] prev = new long[batches];
      StringBuilder sb = new StringBuilder();
      String[] names = {"get", "put", "evict", "commit"};
      for (int p = 0; p < 4; p++) {
        long[] d = new long[batches - 2];
        for (int b = 2; b < batches; b++) d[b - 2] = ph[p][b] - (p == 0 ? 0 : ph[p - 1][b]);
        Arrays.sort(d);
        sb.append(String.format(" %s %.1f", names[p], d[d.length / 2] / 1e6));
      }
      long[] cw = Arrays.copyOfRange(commitWall, 2, batches);
      Arrays.sort(cw);
      sb.append(String.format("  commit wall %.1f", cw[cw.length / 2] / 1e6));
      System.out.println("  phases p50 CPU ms:" + sb);
      System.out.printf(
          "%s shops=%d rows=%d batches=%d rows=%d  task-thread CPU p50 %.1f ms (min %.1f)  wall p50 %.1f ms (min %.1f)%n",
          newApi ? "new" : "old",
          shops,
          rows,
          batches,
          count,
          c[c.length / 2] / 1e6,
          c[0] / 1e6,
          w[w.length / 2] / 1e6,
          w[0] / 1e6);
    }
  }
}
