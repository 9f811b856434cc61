package io.streamstate.testkit.engine;

import static io.streamstate.testkit.engine.EngineFixture.bytes;
import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.engine.CloseableIterator;
import io.streamstate.core.engine.KeyValue;
import io.streamstate.core.engine.StateTransaction;
import io.streamstate.core.engine.StoreOptions;
import io.streamstate.core.engine.VersionedStore;
import io.streamstate.testkit.InMemoryStorage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What an open iterator sees of changes made after it was created in the same transaction: a live
 * view, as Spark's HDFS-backed provider's iterators (Spark's store contract, {@code
 * StateStoreSuiteBase} "SPARK-38320", requires it of every provider but Spark's RocksDB one). Each
 * step returns the smallest key after the last one returned, with its value as the transaction
 * holds it at that step; an iterator created over nothing stays empty. Checked against a plain map
 * of the expected state, step by step, with several iterators open at once.
 */
class IteratorViewTest {
  @TempDir Path tmp;

  private static String text(byte[] b) {
    return new String(b, StandardCharsets.UTF_8);
  }

  private VersionedStore open() {
    return VersionedStore.builder("it", new InMemoryStorage())
        .localDir(tmp.resolve("l"))
        .options(StoreOptions.defaults())
        .memoryBudget(EngineFixture.BUDGET)
        .open();
  }

  private static Map<String, String> drain(CloseableIterator<KeyValue> it) {
    Map<String, String> out = new TreeMap<>();
    try (it) {
      while (it.hasNext()) {
        KeyValue kv = it.next();
        out.put(text(kv.key()), text(kv.value()));
      }
    }
    return out;
  }

  /**
   * Spark's SPARK-38320 sequence, with the outcomes StateStoreSuiteBase asserts for HDFS-backed.
   */
  @Test
  void theSpark38320SequenceSeesWhatTheHdfsBackedProviderSees() {
    try (VersionedStore store = open()) {
      long v;
      try (StateTransaction tx = store.begin(0)) {
        CloseableIterator<KeyValue> itr1 = tx.iterator("default"); // over nothing
        tx.put("default", bytes("1"), bytes("100"));
        tx.put("default", bytes("2"), bytes("200"));
        CloseableIterator<KeyValue> itr2 = tx.iterator("default");
        tx.put("default", bytes("1"), bytes("101"));
        tx.put("default", bytes("3"), bytes("300"));
        CloseableIterator<KeyValue> itr3 = tx.iterator("default");
        Map<String, String> last = Map.of("1", "101", "2", "200", "3", "300");
        assertThat(drain(itr1)).isEmpty();
        assertThat(drain(itr2)).isEqualTo(last);
        assertThat(drain(itr3)).isEqualTo(last);
        v = tx.commit();
      }
      try (StateTransaction tx = store.begin(v)) {
        CloseableIterator<KeyValue> itr1 = tx.iterator("default");
        tx.put("default", bytes("3"), bytes("301"));
        tx.put("default", bytes("4"), bytes("400"));
        CloseableIterator<KeyValue> itr2 = tx.iterator("default");
        tx.put("default", bytes("4"), bytes("401"));
        tx.put("default", bytes("5"), bytes("500"));
        CloseableIterator<KeyValue> itr3 = tx.iterator("default");
        Map<String, String> last =
            Map.of("1", "101", "2", "200", "3", "301", "4", "401", "5", "500");
        assertThat(drain(itr1)).isEqualTo(last);
        assertThat(drain(itr2)).isEqualTo(last);
        assertThat(drain(itr3)).isEqualTo(last);
      }
    }
  }

  /**
   * Random puts and deletes, before and after each iterator's position, interleaved with steps of
   * up to four open iterators (whole family, and ranges): every step equals the model's smallest
   * live key after that iterator's last one, with its current value.
   */
  @Test
  void everyStepSeesTheStateAsItIsThen() {
    Random random = new Random(38320);
    try (VersionedStore store = open()) {
      TreeMap<String, String> model = new TreeMap<>();
      long v = 0;
      for (int round = 0; round < 30; round++) {
        try (StateTransaction tx = store.begin(v)) {
          List<Cursor> open = new ArrayList<>();
          for (int op = 0; op < 400; op++) {
            int what = random.nextInt(10);
            if (what < 4) {
              String k = key(random);
              String val = "v" + random.nextInt(1000);
              tx.put("default", bytes(k), bytes(val));
              model.put(k, val);
            } else if (what < 6) {
              String k = key(random);
              tx.delete("default", bytes(k));
              model.remove(k);
            } else if (what < 7 && open.size() < 4) {
              String from = random.nextBoolean() ? null : key(random);
              String to = from != null && random.nextBoolean() ? from + "~" : null;
              CloseableIterator<KeyValue> it =
                  from == null
                      ? tx.iterator("default")
                      : tx.rangeIterator("default", bytes(from), to == null ? null : bytes(to));
              Cursor c = new Cursor(it, from, to);
              c.createdOverNothing = c.expectedNext(model) == null;
              open.add(c);
            } else if (!open.isEmpty()) {
              Cursor c = open.get(random.nextInt(open.size()));
              if (c.step(model)) {
                open.remove(c);
              }
            }
          }
          for (Cursor c : open) {
            while (!c.step(model)) {}
          }
          v = tx.commit();
        }
      }
      try (StateTransaction tx = store.begin(v)) {
        assertThat(drain(tx.iterator("default"))).isEqualTo(model);
      }
    }
  }

  private static String key(Random random) {
    return String.format("k%03d", random.nextInt(200));
  }

  /** One open iterator and where the model says it is. */
  private static final class Cursor {
    final CloseableIterator<KeyValue> it;
    final String from; // null: from the start
    final String to; // null: to the end
    boolean createdOverNothing;
    String last;

    Cursor(CloseableIterator<KeyValue> it, String from, String to) {
      this.it = it;
      this.from = from;
      this.to = to;
    }

    /** One step, checked against the model; true when the iterator is exhausted. */
    boolean step(TreeMap<String, String> model) {
      Map.Entry<String, String> expected = createdOverNothing ? null : expectedNext(model);
      if (expected == null) {
        assertThat(it.hasNext()).as("iterator from %s to %s after %s", from, to, last).isFalse();
        return true;
      }
      assertThat(it.hasNext()).as("iterator from %s to %s after %s", from, to, last).isTrue();
      KeyValue kv = it.next();
      assertThat(text(kv.key())).isEqualTo(expected.getKey());
      assertThat(text(kv.value())).isEqualTo(expected.getValue());
      last = expected.getKey();
      return false;
    }

    Map.Entry<String, String> expectedNext(TreeMap<String, String> model) {
      Map.Entry<String, String> e =
          last != null
              ? model.higherEntry(last)
              : from != null ? model.ceilingEntry(from) : model.firstEntry();
      return e == null || (to != null && e.getKey().compareTo(to) >= 0) ? null : e;
    }
  }
}
