package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.ByteKeys;
import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.core.engine.retention.SegmentSweep;
import io.streamstate.core.engine.segment.GroupCommitter;
import io.streamstate.core.hedge.HedgePolicy;
import io.streamstate.core.hedge.HedgedWriter;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.LongStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Randomized model test of the engine: random sequences of put, delete, commit, abort, crash (the
 * local instance thrown away), reload from durable storage, reads of older versions, zombie writers
 * and maintenance, checked after every step against plain Java maps.
 *
 * <p>A zombie commits a version that already exists (as a task retry or a re-run batch would): its
 * commit succeeds as another alternative of that version. The model then holds every alternative of
 * each version: a load must return exactly one of them, and the state of the versions built on a
 * load follows that one (lineage), never a mix.
 *
 * <p>Odd seeds hedge every changelog write, so that a commit's two copies race and loads meet
 * either. Seeds 2 and 3 modulo 4 commit through group commit (every commit a segment of its own,
 * zombies' too), and their maintenance also sweeps segments: versions within retention must still
 * load after every sweep.
 *
 * <p>Seeds and length: {@code -Dstreamstate.model.seeds=4 -Dstreamstate.model.ops=10000} (the
 * build's defaults: one of each of the four seed kinds, two of each with {@code -Pextended}; raise
 * the seeds for a soak); a single seed with {@code -Dstreamstate.model.seed=N}. A divergence fails
 * with the seed and step.
 */
class EngineModelTest {
  private static final int RETAIN = 12;
  private static final List<String> EXTRA_FAMILIES = List.of("cf1", "cf2", "cf3");

  @TempDir static Path tmp;
  private static final RocksDbMemoryBudget budget = EngineFixture.BUDGET;

  static Stream<Long> seeds() {
    String one = System.getProperty("streamstate.model.seed");
    if (one != null) {
      return Stream.of(Long.parseLong(one));
    }
    // One seed of each of the four kinds; two of each in the extended suite (-Pextended).
    boolean extended = "extended".equals(System.getProperty("streamstate.suite"));
    int n = Integer.getInteger("streamstate.model.seeds", extended ? 8 : 4);
    return LongStream.range(0, n).boxed();
  }

  /** Committed state of one version: family -> sorted map. */
  private static Map<String, TreeMap<byte[], byte[]>> copy(Map<String, TreeMap<byte[], byte[]>> m) {
    Map<String, TreeMap<byte[], byte[]>> c = new HashMap<>();
    m.forEach((k, v) -> c.put(k, new TreeMap<>(v)));
    return c;
  }

  private static Map<String, TreeMap<byte[], byte[]>> empty() {
    Map<String, TreeMap<byte[], byte[]>> m = new HashMap<>();
    m.put("default", new TreeMap<>(ByteKeys.ORDER));
    return m;
  }

  @ParameterizedTest(name = "seed {0}")
  @MethodSource("seeds")
  void engineMatchesModel(long seed) {
    int ops = Integer.getInteger("streamstate.model.ops", 10_000);
    new Run(seed, ops).execute();
  }

  private static final class Run {
    final long seed;
    final int ops;
    final Random random;
    final InMemoryStorage storage = new InMemoryStorage();
    final StoreOptions options;

    /** Every committed alternative of each retained version. */
    final Map<Long, List<Map<String, TreeMap<byte[], byte[]>>>> history = new HashMap<>();

    VersionedStore store;
    int instance;
    long latest;
    StateTransaction tx;
    Map<String, TreeMap<byte[], byte[]>> working;
    int step;
    String op;
    final Map<String, Integer> counts = new TreeMap<>();
    final Map<String, Long> nanos = new TreeMap<>();

    /** Odd seeds hedge every changelog write (a zero deadline), so both copies race each time. */
    final HedgedWriter hedger;

    /** Seeds 2 and 3 modulo 4 publish segments instead of changelogs. */
    final GroupCommitter groupCommitter;

    Run(long seed, int ops) {
      this.seed = seed;
      this.ops = ops;
      this.random = new Random(seed);
      // Vary snapshot spacing per seed so that restores hit snapshots at many distances.
      this.options =
          StoreOptions.defaults()
              .withMinVersionsToRetain(RETAIN)
              .withSnapshotInterval(1 + random.nextInt(6))
              .withTornFileGraceMillis(0);
      this.hedger =
          seed % 2 == 0
              ? null
              : new HedgedWriter(
                  HedgePolicy.builder()
                      .floor(Duration.ZERO)
                      .initialDeadline(Duration.ZERO)
                      .budgetFraction(1)
                      .build(),
                  ProcessResources.shared());
      this.groupCommitter =
          seed % 4 >= 2
              ? new GroupCommitter(ProcessResources.shared(), storage, hedger, 0, 0, null)
              : null;
    }

    void execute() {
      history.put(0L, List.of(empty()));
      openStore();
      try {
        for (step = 0; step < ops; step++) {
          long t0 = System.nanoTime();
          doStep();
          long t1 = System.nanoTime();
          checkWorking();
          nanos.merge(op, t1 - t0, Long::sum);
          nanos.merge("(check)", System.nanoTime() - t1, Long::sum);
        }
        // Finally: a brand-new instance recovers the latest version from durable files alone.
        op = "final recovery";
        abortTx();
        crash();
        begin(latest);
        abortTx();
      } catch (Throwable t) {
        throw new AssertionError(
            "Divergence with seed "
                + seed
                + " at step "
                + step
                + " ("
                + op
                + "), latest version "
                + latest
                + "; rerun with -Dstreamstate.model.seed="
                + seed
                + ": "
                + t,
            t);
      } finally {
        if (tx != null) {
          tx.abort();
        }
        store.close();
      }
      System.out.printf("model seed %d: %d ops %s, versions %d%n", seed, ops, counts, latest);
      StringBuilder ms = new StringBuilder();
      nanos.forEach((k, v) -> ms.append(k).append('=').append(v / 1_000_000).append("ms "));
      System.out.println("  time by op: " + ms);
    }

    void openStore() {
      instance++;
      store =
          VersionedStore.builder("model-" + seed, storage)
              .prefix("s/")
              .localDir(tmp.resolve("seed" + seed + "-" + instance))
              .options(options)
              .memoryBudget(budget)
              .hedger(hedger)
              .groupCommitter(groupCommitter)
              .open();
    }

    /** Loads a version; its state must be exactly one of the version's alternatives. */
    void begin(long version) {
      tx = store.begin(version);
      String actual = canonicalOfTx();
      for (Map<String, TreeMap<byte[], byte[]>> alternative : history.get(version)) {
        if (canonical(alternative).equals(actual)) {
          working = copy(alternative);
          return;
        }
      }
      throw new AssertionError(
          "version "
              + version
              + " loaded a state that is none of its "
              + history.get(version).size()
              + " alternative(s): "
              + actual);
    }

    String canonicalOfTx() {
      Map<String, TreeMap<byte[], byte[]>> state = new HashMap<>();
      for (String family : tx.columnFamilies()) {
        TreeMap<byte[], byte[]> m = new TreeMap<>(ByteKeys.ORDER);
        try (CloseableIterator<KeyValue> it = tx.iterator(family)) {
          it.forEachRemaining(kv -> m.put(kv.key(), kv.value()));
        }
        state.put(family, m);
      }
      return canonical(state);
    }

    static String canonical(Map<String, TreeMap<byte[], byte[]>> state) {
      StringBuilder b = new StringBuilder();
      for (String family : new TreeSet<>(state.keySet())) {
        b.append(family).append('{');
        state
            .get(family)
            .forEach((k, v) -> b.append(hex(k)).append('=').append(hex(v)).append(','));
        b.append('}');
      }
      return b.toString();
    }

    void ensureTx() {
      if (tx == null) {
        begin(latest);
      }
    }

    void abortTx() {
      if (tx != null) {
        tx.abort();
        tx = null;
        working = null;
      }
    }

    void crash() {
      tx = null;
      working = null;
      store.close();
      openStore();
    }

    void doStep() {
      int r = random.nextInt(1000);
      if (r < 400) {
        op = "put";
        ensureTx();
        String family = randomFamily();
        byte[] key = randomKey();
        byte[] value = randomValue();
        if (random.nextBoolean()) {
          tx.put(family, key, value);
        } else {
          assertThat(tx.putAndCheckExisted(family, key, value))
              .as("existed before put")
              .isEqualTo(working.get(family).containsKey(key));
        }
        working.get(family).put(key, value);
      } else if (r < 550) {
        op = "delete";
        ensureTx();
        String family = randomFamily();
        byte[] key = randomKey();
        if (random.nextBoolean()) {
          tx.delete(family, key);
        } else {
          assertThat(tx.deleteAndCheckExisted(family, key))
              .as("existed before delete")
              .isEqualTo(working.get(family).containsKey(key));
        }
        working.get(family).remove(key);
      } else if (r < 650) {
        op = "get";
        ensureTx();
        String family = randomFamily();
        byte[] key = randomKey();
        assertThat(tx.get(family, key)).isEqualTo(working.get(family).get(key));
      } else if (r < 700) {
        op = "scan";
        ensureTx();
        checkScans();
      } else if (r < 720) {
        op = "delete while iterating";
        ensureTx();
        String family = randomFamily();
        try (CloseableIterator<KeyValue> it = tx.iterator(family)) {
          while (it.hasNext()) {
            KeyValue kv = it.next();
            int choice = random.nextInt(6);
            if (choice == 0) {
              tx.delete(family, kv.key());
              working.get(family).remove(kv.key());
            } else if (choice == 1) {
              // Spark's eviction: the key the iterator just returned is known to exist.
              assertThat(tx.deleteAndCheckExisted(family, kv.key().clone()))
                  .as("returned key existed")
                  .isTrue();
              working.get(family).remove(kv.key());
              assertThat(tx.exists(family, kv.key())).as("deleted key exists").isFalse();
            } else if (choice == 2) {
              assertThat(tx.exists(family, kv.key().clone())).as("returned key exists").isTrue();
            }
          }
        }
      } else if (r < 820) {
        op = "commit";
        ensureTx();
        long v = tx.commit();
        assertThat(v).isEqualTo(tx.version() + 1);
        latest = v;
        history.put(v, new ArrayList<>(List.of(working)));
        history.remove(v - RETAIN - 1);
        tx = null;
        working = null;
      } else if (r < 840) {
        op = "abort";
        abortTx();
      } else if (r < 850) {
        op = "crash";
        crash();
      } else if (r < 858) {
        op = "read an older version";
        abortTx();
        long oldest = Math.max(0, latest - RETAIN + 1);
        begin(oldest + (long) random.nextInt((int) (latest - oldest + 1)));
        checkWorking();
        abortTx(); // committing from an older version is the zombie's case below
      } else if (r < 863) {
        op = "zombie writer";
        if (latest == 0) {
          return;
        }
        abortTx();
        long oldest = Math.max(0, latest - RETAIN + 1);
        long v = oldest + (long) random.nextInt((int) (latest - oldest));
        begin(v);
        byte[] marker = new byte[9];
        random.nextBytes(marker);
        tx.put("default", new byte[] {(byte) 0xFF, 1}, marker);
        working.get("default").put(new byte[] {(byte) 0xFF, 1}, marker);
        assertThat(tx.commit()).isEqualTo(v + 1);
        history.get(v + 1).add(working);
        tx = null;
        working = null;
      } else if (r < 885) {
        op = "maintenance";
        store.maintain();
        if (groupCommitter != null) {
          counts.merge(
              "(segments swept)",
              SegmentSweep.of(ProcessResources.shared(), storage).sweep(options),
              Integer::sum);
        }
      } else if (r < 950) {
        op = "create family";
        ensureTx();
        String family = EXTRA_FAMILIES.get(random.nextInt(EXTRA_FAMILIES.size()));
        boolean created = tx.createColumnFamily(family);
        assertThat(created).isEqualTo(!working.containsKey(family));
        working.putIfAbsent(family, new TreeMap<>(ByteKeys.ORDER));
      } else if (r < 965) {
        op = "drop family";
        ensureTx();
        String family = EXTRA_FAMILIES.get(random.nextInt(EXTRA_FAMILIES.size()));
        assertThat(tx.dropColumnFamily(family)).isEqualTo(working.remove(family) != null);
      } else if (r < 970) {
        op = "crash with open transaction, then reload";
        ensureTx();
        crash();
        begin(latest);
      } else {
        op = "exists";
        ensureTx();
        String family = randomFamily();
        byte[] key = randomKey();
        assertThat(tx.exists(family, key)).isEqualTo(working.get(family).containsKey(key));
      }
      counts.merge(op, 1, Integer::sum);
    }

    String randomFamily() {
      List<String> families = new ArrayList<>(new TreeSet<>(working.keySet()));
      return families.get(random.nextInt(families.size()));
    }

    byte[] randomKey() {
      // Few distinct short keys, so that updates, deletes and prefixes collide often.
      byte[] key = new byte[1 + random.nextInt(3)];
      for (int i = 0; i < key.length; i++) {
        key[i] = (byte) (random.nextInt(6) * 50); // includes bytes >= 0x80
      }
      return key;
    }

    byte[] randomValue() {
      byte[] v = new byte[random.nextInt(12)];
      random.nextBytes(v);
      return v;
    }

    void checkScans() {
      String family = randomFamily();
      TreeMap<byte[], byte[]> m = working.get(family);
      byte[] prefix = new byte[] {(byte) (random.nextInt(6) * 50)};
      byte[] end = ByteKeys.prefixEnd(prefix);
      assertEntries(
          tx.prefixIterator(family, prefix),
          end == null ? m.tailMap(prefix, true) : m.subMap(prefix, true, end, false),
          "prefix " + HexFormat.of().formatHex(prefix));
      byte[] from = randomKey();
      byte[] to = randomKey();
      if (ByteKeys.ORDER.compare(from, to) > 0) {
        byte[] t = from;
        from = to;
        to = t;
      }
      assertEntries(tx.rangeIterator(family, from, to), m.subMap(from, true, to, false), "range");
      assertEntries(tx.rangeIterator(family, from, null), m.tailMap(from, true), "open range");
    }

    void checkWorking() {
      if (tx == null) {
        return;
      }
      assertThat(tx.columnFamilies()).isEqualTo(new TreeSet<>(working.keySet()));
      for (Map.Entry<String, TreeMap<byte[], byte[]>> e : working.entrySet()) {
        assertEntries(tx.iterator(e.getKey()), e.getValue(), "family " + e.getKey());
      }
    }

    static void assertEntries(
        CloseableIterator<KeyValue> it, Map<byte[], byte[]> expected, String what) {
      List<String> actual = new ArrayList<>();
      try (it) {
        while (it.hasNext()) {
          KeyValue kv = it.next();
          actual.add(hex(kv.key()) + "=" + hex(kv.value()));
        }
      }
      List<String> want = new ArrayList<>();
      expected.forEach((k, v) -> want.add(hex(k) + "=" + hex(v)));
      assertThat(actual).as(what).isEqualTo(want);
    }

    static String hex(byte[] b) {
      return HexFormat.of().formatHex(b);
    }
  }
}
