package io.streamstate.spark;

import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.spark.SparkConf;
import org.apache.spark.SparkEnv;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The RocksDB memory cap of an executor, sized against its container. RocksDB's memory is native,
 * and on YARN and Kubernetes native memory is paid from {@code spark.executor.memoryOverhead}
 * (default: 10% of {@code spark.executor.memory}, at least 384 MiB), which the JVM's own native
 * memory (metaspace, code cache, thread stacks, GC structures: about {@link #JVM_NATIVE_BYTES})
 * already uses. A cap that does not fit gets the container killed, so without {@code
 * memoryCapBytes} the cap is 256 MiB where it fits and what fits where it does not (at least 64
 * MiB); a cap set larger than what fits is kept, with a warning naming both keys. Outside a
 * container (local mode, standalone) the cap is 256 MiB unless set. Sizing rule: spark/README.md,
 * "Sizing native memory".
 */
final class ExecutorMemory {
  private static final Logger LOG = LoggerFactory.getLogger(ExecutorMemory.class);

  /** What the JVM itself keeps outside its heap, beside RocksDB (measured: 250-300 MB). */
  static final long JVM_NATIVE_BYTES = 320L << 20;

  static final long MIN_CAP_BYTES = 64L << 20;

  private static final AtomicBoolean LOGGED = new AtomicBoolean();

  private ExecutorMemory() {}

  /** The cap for this JVM's stores: {@code conf}'s, else sized as the class says. */
  static long capBytes(StreamStateConf conf) {
    SparkEnv env = SparkEnv.get();
    return capBytes(
        conf.memoryCapSet() ? conf.memoryCapBytes() : -1, env == null ? null : env.conf());
  }

  /**
   * @param explicitCap the cap the user set, or -1
   * @param sparkConf the executor's Spark configuration, or null (none: no container)
   */
  static long capBytes(long explicitCap, SparkConf sparkConf) {
    OptionalLong overhead = sparkConf == null ? OptionalLong.empty() : containerOverhead(sparkConf);
    long defaultCap = RocksDbMemoryBudget.DEFAULT_CAP_BYTES;
    if (overhead.isEmpty()) {
      return explicitCap > 0 ? explicitCap : defaultCap;
    }
    long fits = Math.max(MIN_CAP_BYTES, overhead.getAsLong() - JVM_NATIVE_BYTES);
    if (explicitCap > 0) {
      if (explicitCap > fits && LOGGED.compareAndSet(false, true)) {
        LOG.warn(
            "{}={} MiB does not fit spark.executor.memoryOverhead ({} MiB) beside the JVM's own"
                + " native memory (about {} MiB): the container may be killed for exceeding its"
                + " memory. Raise spark.executor.memoryOverhead to at least {} MiB (spark/README.md,"
                + " \"Sizing native memory\")",
            StreamStateConf.MEMORY_CAP_BYTES,
            explicitCap >> 20,
            overhead.getAsLong() >> 20,
            JVM_NATIVE_BYTES >> 20,
            (explicitCap + JVM_NATIVE_BYTES) >> 20);
      }
      return explicitCap;
    }
    long cap = Math.min(defaultCap, fits);
    if (cap < defaultCap && LOGGED.compareAndSet(false, true)) {
      LOG.info(
          "{} is not set: RocksDB gets {} MiB, what fits spark.executor.memoryOverhead ({} MiB)"
              + " beside the JVM's own native memory (about {} MiB). A large state wants more:"
              + " raise both (spark/README.md, \"Sizing native memory\")",
          StreamStateConf.MEMORY_CAP_BYTES,
          cap >> 20,
          overhead.getAsLong() >> 20,
          JVM_NATIVE_BYTES >> 20);
    }
    return cap;
  }

  /**
   * The executor's memory overhead where a container limits it (YARN, Kubernetes), as Spark sizes
   * it; empty elsewhere.
   */
  static OptionalLong containerOverhead(SparkConf c) {
    String master = c.get("spark.master", "").toLowerCase(Locale.ROOT);
    if (!master.startsWith("yarn") && !master.startsWith("k8s")) {
      return OptionalLong.empty();
    }
    if (c.contains("spark.executor.memoryOverhead")) {
      return OptionalLong.of(c.getSizeAsMb("spark.executor.memoryOverhead") << 20);
    }
    long executor = c.getSizeAsMb("spark.executor.memory", "1g") << 20;
    double factor = c.getDouble("spark.executor.memoryOverheadFactor", 0.10);
    return OptionalLong.of(Math.max(384L << 20, (long) (factor * executor)));
  }
}
