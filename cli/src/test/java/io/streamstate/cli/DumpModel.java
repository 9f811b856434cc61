package io.streamstate.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.cli.json.Json;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

/**
 * What {@code dump} must print for {@link SparkQueries.DedupCount}'s two operators, from the values
 * sent, in plain Java: operator 0 (the count) holds a row per {@code value % 3} with the number of
 * distinct values of that key, operator 1 (the dedup) a row per distinct value. A key's partition
 * is Spark's hash partitioning ({@code pmod(hash(key), partitions)}), asked of Spark.
 */
final class DumpModel {
  private DumpModel() {}

  /** The values the four batches every IT's query runs send, batch by batch. */
  static final List<List<Integer>> BATCHES =
      List.of(List.of(1, 2, 3), List.of(3, 4, 5), List.of(6, 7), List.of(1, 8, 9));

  /** The values sent by the batches whose state version {@code version} holds. */
  static List<Integer> sentUpTo(long version) {
    List<Integer> values = new ArrayList<>();
    BATCHES.subList(0, (int) version).forEach(values::addAll);
    return values;
  }

  /** Operator 0's state: key to count, for the values of the batches run so far. */
  static Map<Long, Long> counts(Collection<Integer> values) {
    Map<Long, Long> byKey = new TreeMap<>();
    for (int v : new TreeSet<>(values)) {
      byKey.merge((long) (v % 3), 1L, Long::sum);
    }
    return byKey;
  }

  /** Operator 1's state: the distinct values (each with a null value). */
  static Map<Long, Long> distinct(Collection<Integer> values) {
    Map<Long, Long> byKey = new TreeMap<>();
    for (int v : new TreeSet<>(values)) {
      byKey.put((long) v, null);
    }
    return byKey;
  }

  /** The rows of {@code state} in {@code partition} of {@code partitions}. */
  static Map<Long, Long> inPartition(
      SparkSession spark, Map<Long, Long> state, int partition, int partitions) {
    Map<Long, Integer> partitionOf = new TreeMap<>();
    String keys = String.join(",", state.keySet().stream().map(k -> "(" + k + ")").toList());
    if (!state.isEmpty()) {
      for (Row r :
          spark
              .sql(
                  "SELECT k, pmod(hash(CAST(k AS INT)), "
                      + partitions
                      + ") FROM VALUES "
                      + keys
                      + " AS t(k)")
              .collectAsList()) {
        partitionOf.put(((Number) r.get(0)).longValue(), r.getInt(1));
      }
    }
    Map<Long, Long> kept = new LinkedHashMap<>();
    for (Map.Entry<Long, Long> e : state.entrySet()) {
      if (partitionOf.get(e.getKey()) == partition) {
        kept.put(e.getKey(), e.getValue());
      }
    }
    return kept;
  }

  /**
   * The rows {@code dump} printed, in its order: each line one JSON object with {@code key} and
   * {@code value} objects of one field each (the first field's number; null for a null value).
   */
  static Map<Long, Long> printed(String out) {
    Map<Long, Long> rows = new LinkedHashMap<>();
    List<Long> order = new ArrayList<>();
    for (String line : out.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      Map<String, Object> row = Json.parseObject(line);
      assertThat(row).as(line).containsOnlyKeys("key", "value");
      Map<String, Object> key = Cli.map(row.get("key"));
      Map<String, Object> value = Cli.map(row.get("value"));
      assertThat(key).as(line).hasSize(1);
      assertThat(value).as(line).hasSize(1);
      Long k = (Long) key.values().iterator().next();
      order.add(k);
      assertThat(rows).as("one row per key: %s", line).doesNotContainKey(k);
      rows.put(k, (Long) value.values().iterator().next());
    }
    assertThat(order).as("sorted by key").isSorted();
    return rows;
  }
}
