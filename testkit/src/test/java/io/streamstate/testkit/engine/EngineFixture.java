package io.streamstate.testkit.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.ByteKeys;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import java.nio.charset.StandardCharsets;
import java.util.TreeMap;

/** A deterministic workload and its plain-Java reference, shared by the engine fault tests. */
final class EngineFixture {
  /** One memory budget for every engine test of this JVM, as a process has in production. */
  static final RocksDbMemoryBudget BUDGET = new RocksDbMemoryBudget(64L << 20);

  private EngineFixture() {}

  static byte[] bytes(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  /** Applies the changes of version {@code v} (v >= 1) to a transaction at {@code v - 1}. */
  static void writeVersion(StateTransaction tx, long v) {
    for (int i = 0; i < 50; i++) {
      tx.put("default", bytes("k" + (v * 7 + i) % 300), bytes("v" + v + "-" + i));
    }
    tx.delete("default", bytes("k" + (v * 13) % 300));
  }

  /** The reference state after versions 1..v. */
  static TreeMap<String, String> reference(long v) {
    TreeMap<String, String> m = new TreeMap<>();
    for (long u = 1; u <= v; u++) {
      for (int i = 0; i < 50; i++) {
        m.put("k" + (u * 7 + i) % 300, "v" + u + "-" + i);
      }
      m.remove("k" + (u * 13) % 300);
    }
    return m;
  }

  static void assertState(StateTransaction tx, long v) {
    assertThat(contents(tx)).as("state at version %d", v).isEqualTo(reference(v));
  }

  /** The default column family as UTF-8 strings, in key order. */
  static TreeMap<String, String> contents(StateTransaction tx) {
    TreeMap<byte[], String> actual = new TreeMap<>(ByteKeys.ORDER);
    tx.iterator("default")
        .forEachRemaining(
            (KeyValue kv) -> actual.put(kv.key(), new String(kv.value(), StandardCharsets.UTF_8)));
    TreeMap<String, String> got = new TreeMap<>();
    actual.forEach((k, val) -> got.put(new String(k, StandardCharsets.UTF_8), val));
    return got;
  }
}
