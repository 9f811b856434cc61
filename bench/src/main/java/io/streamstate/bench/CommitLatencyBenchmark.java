package io.streamstate.bench;

import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.storage.LocalStorage;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * Latency of {@link StateTransaction#commit()} on local disk: encoding the changelog, publishing it
 * with create-if-absent plus fsync of file and directory, and applying the batch to RocksDB. The
 * puts happen in the per-invocation setup, so only the commit is timed. Keys are drawn from a space
 * ten times the batch, so commits update existing keys as well as adding new ones.
 *
 * <p>Run: {@code java -jar bench/target/benchmarks.jar CommitLatency}
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
@Fork(1)
public class CommitLatencyBenchmark {
  @Param({"1000", "100000"})
  public int changedKeys;

  @Param({"100"})
  public int valueBytes;

  private Path dir;
  private RocksDbMemoryBudget budget;
  private VersionedStore store;
  private StateTransaction tx;
  private long version;
  private final SplittableRandom random = new SplittableRandom(42);

  @Setup(Level.Trial)
  public void openStore() throws IOException {
    dir = Files.createTempDirectory("streamstate-bench");
    budget = new RocksDbMemoryBudget(256L << 20);
    store =
        VersionedStore.builder("bench", new LocalStorage(dir.resolve("durable")))
            .localDir(dir.resolve("local"))
            .options(StoreOptions.defaults())
            .memoryBudget(budget)
            .open();
    version = 0;
  }

  @Setup(Level.Invocation)
  public void prepareChanges() {
    tx = store.begin(version);
    byte[] value = new byte[valueBytes];
    for (int i = 0; i < changedKeys; i++) {
      byte[] key = new byte[16];
      long k = random.nextLong(changedKeys * 10L);
      for (int b = 0; b < 8; b++) {
        key[b] = (byte) (k >>> (56 - 8 * b));
      }
      random.nextBytes(value);
      tx.put("default", key, value);
    }
  }

  @Benchmark
  public long commit() {
    version = tx.commit();
    return version;
  }

  @TearDown(Level.Trial)
  public void close() throws IOException {
    store.close();
    budget.close();
    try (Stream<Path> walk = Files.walk(dir)) {
      walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    }
  }
}
