package io.streamstate.bench.wal;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.streaming.util.WriteAheadLog;
import org.apache.spark.streaming.util.WriteAheadLogRecordHandle;

/**
 * One cell's load: {@code writers} threads, released together, each writing {@code records} records
 * of {@code recordBytes} (seeded content) one after the other, as receivers storing blocks. Record
 * times come from one counter (unique: Spark's log with {@code closeFileAfterWrite} names a file by
 * its record's time). Each writer reads its last record back and compares it.
 */
final class WalLoad {
  private WalLoad() {}

  /** The latencies of every write, in nanoseconds, and the wall time of the whole cell. */
  record Result(long[] latenciesNanos, long elapsedNanos) {
    double recordsPerSecond() {
      return latenciesNanos.length / (elapsedNanos / 1e9);
    }

    double percentileMillis(double p) {
      long[] sorted = latenciesNanos.clone();
      Arrays.sort(sorted);
      int i = (int) Math.ceil(p * sorted.length) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, i))] / 1e6;
    }
  }

  static Result run(WriteAheadLog log, int writers, int records, int recordBytes, long seed)
      throws Exception {
    AtomicLong clock = new AtomicLong(System.currentTimeMillis());
    CyclicBarrier start = new CyclicBarrier(writers + 1);
    long[][] latencies = new long[writers][records];
    List<Thread> threads = new ArrayList<>();
    Throwable[] failure = new Throwable[1];
    for (int w = 0; w < writers; w++) {
      int writer = w;
      Thread t =
          new Thread(
              () -> {
                try {
                  Random random = new Random(seed * 31 + writer);
                  byte[] payload = new byte[recordBytes];
                  WriteAheadLogRecordHandle last = null;
                  start.await();
                  for (int i = 0; i < records; i++) {
                    random.nextBytes(payload);
                    long t0 = System.nanoTime();
                    last = log.write(ByteBuffer.wrap(payload), clock.getAndIncrement());
                    latencies[writer][i] = System.nanoTime() - t0;
                  }
                  ByteBuffer back = log.read(last);
                  if (!back.equals(ByteBuffer.wrap(payload))) {
                    throw new IllegalStateException("Read back a different last record: " + last);
                  }
                } catch (Throwable e) {
                  synchronized (failure) {
                    failure[0] = e;
                  }
                }
              },
              "wal-writer-" + w);
      threads.add(t);
      t.start();
    }
    start.await();
    long t0 = System.nanoTime();
    for (Thread t : threads) {
      t.join();
    }
    long elapsed = System.nanoTime() - t0;
    if (failure[0] != null) {
      throw new IllegalStateException("A writer failed: " + failure[0], failure[0]);
    }
    long[] all = new long[writers * records];
    for (int w = 0; w < writers; w++) {
      System.arraycopy(latencies[w], 0, all, w * records, records);
    }
    return new Result(all, elapsed);
  }
}
