package io.streamstate.core.engine;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.storage.LocalStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class VersionedStoreSmokeTest {
  @TempDir Path tmp;

  static byte[] b(String s) {
    return s.getBytes(StandardCharsets.UTF_8);
  }

  static String s(byte[] b) {
    return b == null ? null : new String(b, StandardCharsets.UTF_8);
  }

  @Test
  void commitsSnapshotsAndRecovers() {
    LocalStorage storage = new LocalStorage(tmp.resolve("durable"));
    try (RocksDbMemoryBudget budget = new RocksDbMemoryBudget(64L << 20)) {
      StoreOptions opts = StoreOptions.defaults().withSnapshotInterval(2).withMinVersionsToRetain(2)
          .withTornFileGraceMillis(0);
      try (VersionedStore store = VersionedStore.open("s", storage, "op/0/", tmp.resolve("l1"), opts, budget)) {
        for (int v = 0; v < 6; v++) {
          try (StateTransaction tx = store.begin(v)) {
            tx.put("default", b("k" + v), b("v" + v));
            if (v == 1) {
              tx.createColumnFamily("cf");
              tx.put("cf", b("x"), b("y"));
            }
            if (v == 3) {
              tx.delete("default", b("k0"));
            }
            assertThat(tx.commit()).isEqualTo(v + 1);
          }
          store.maintain();
        }
        try (StateTransaction tx = store.begin(6)) {
          List<String> keys = new ArrayList<>();
          tx.iterator("default").forEachRemaining(kv -> keys.add(s(kv.key())));
          assertThat(keys).containsExactly("k1", "k2", "k3", "k4", "k5");
        }
      }
      try (VersionedStore store = VersionedStore.open("s", storage, "op/0/", tmp.resolve("l2"), opts, budget)) {
        try (StateTransaction tx = store.begin(6)) {
          List<String> keys = new ArrayList<>();
          tx.iterator("default").forEachRemaining(kv -> keys.add(s(kv.key())));
          assertThat(keys).containsExactly("k1", "k2", "k3", "k4", "k5");
          assertThat(s(tx.get("cf", b("x")))).isEqualTo("y");
        }
        assertThat(store.metrics().snapshot().durableLoads()).isEqualTo(1);
      }
      System.out.println(storage.list(""));
    }
  }
}
