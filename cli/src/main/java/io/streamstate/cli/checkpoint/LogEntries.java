package io.streamstate.cli.checkpoint;

import io.streamstate.cli.json.Json;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * What Spark writes in its offset and commit log entries, parsed from their text (Spark's format,
 * not ours: a version line, then JSON lines).
 *
 * <pre>
 * offsets/N   v1
 *             {"batchWatermarkMs":..,"batchTimestampMs":..,"conf":{pinned SQL confs}}
 *             one line per source: its offset (JSON), or "-"
 * commits/N   v1 (v2 under checkpoint format v2)
 *             {"nextBatchWatermarkMs":..[,"stateUniqueIds":{"op":[[ids of partition 0's stores], ...]}]}
 * </pre>
 */
public final class LogEntries {
  /** The key of the state store provider class among the pinned confs. */
  public static final String PROVIDER_CLASS = "spark.sql.streaming.stateStore.providerClass";

  /** The key of the state checkpoint format version among the pinned confs (Spark 4.x). */
  public static final String CHECKPOINT_FORMAT_VERSION =
      "spark.sql.streaming.stateStore.checkpointFormatVersion";

  /**
   * The key of the number of shuffle partitions (the state's partitions) among the pinned confs.
   */
  public static final String SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions";

  private LogEntries() {}

  /** An offset log entry. */
  public record Offset(
      String version,
      Long batchWatermarkMs,
      Long batchTimestampMs,
      Map<String, String> conf,
      List<String> sourceOffsets) {}

  /** A commit log entry; {@code stateUniqueIds}: operator to partition to store ids (or empty). */
  public record Commit(
      String version, Long nextBatchWatermarkMs, Map<Long, List<List<String>>> stateUniqueIds) {

    /**
     * The checkpoint id the entry records for the only store of a partition (format v2), as our
     * commit id; empty when there is none, or the partition has several stores (their order is
     * Spark's).
     */
    public OptionalLong commitIdOf(long operator, int partition) {
      List<List<String>> partitions = stateUniqueIds.get(operator);
      if (partitions == null || partition >= partitions.size()) {
        return OptionalLong.empty();
      }
      List<String> ids = partitions.get(partition);
      if (ids == null || ids.size() != 1 || ids.get(0) == null) {
        return OptionalLong.empty();
      }
      String id = ids.get(0);
      if (id.length() != 16 || !id.chars().allMatch(c -> Character.digit(c, 16) >= 0)) {
        return OptionalLong.empty();
      }
      return OptionalLong.of(Long.parseUnsignedLong(id, 16));
    }
  }

  /** The entry versions Spark 3.5 to 4.2 write (OffsetSeqLog and CommitLog: 1, and 2 in 4.x). */
  private static final Set<String> KNOWN_VERSIONS = Set.of("v1", "v2");

  private static void requireKnownVersion(String line, String log) {
    String version = line.trim();
    if (!KNOWN_VERSIONS.contains(version)) {
      throw new Json.JsonException(
          "the "
              + log
              + " log entry's version line is '"
              + (version.length() > 20 ? version.substring(0, 20) + "..." : version)
              + "', not v1 or v2 (what Spark 3.5 to 4.2 write): a newer Spark wrote it, or it is"
              + " not an entry");
    }
  }

  /**
   * Parses an offset log entry.
   *
   * @throws Json.JsonException it is not one
   */
  public static Offset parseOffset(String text) {
    String[] lines = text.split("\n", -1);
    if (lines.length < 2) {
      throw new Json.JsonException("an offset log entry needs a version line and a metadata line");
    }
    requireKnownVersion(lines[0], "offset");
    Map<String, Object> meta = Json.parseObject(lines[1]);
    Map<String, String> conf = new TreeMap<>();
    if (meta.get("conf") instanceof Map<?, ?> m) {
      m.forEach((k, v) -> conf.put(String.valueOf(k), v == null ? null : String.valueOf(v)));
    }
    List<String> sources = new ArrayList<>();
    for (int i = 2; i < lines.length; i++) {
      if (!lines[i].isEmpty() || i < lines.length - 1) {
        sources.add(lines[i]);
      }
    }
    return new Offset(
        lines[0].trim(),
        asLong(meta.get("batchWatermarkMs")),
        asLong(meta.get("batchTimestampMs")),
        conf,
        sources);
  }

  /**
   * Parses a commit log entry.
   *
   * @throws Json.JsonException it is not one
   */
  public static Commit parseCommit(String text) {
    String[] lines = text.split("\n", -1);
    if (lines.length < 2) {
      throw new Json.JsonException("a commit log entry needs a version line and a JSON line");
    }
    requireKnownVersion(lines[0], "commit");
    Map<String, Object> meta = Json.parseObject(lines[1]);
    Map<Long, List<List<String>>> ids = new LinkedHashMap<>();
    if (meta.get("stateUniqueIds") instanceof Map<?, ?> byOperator) {
      for (Map.Entry<?, ?> e : byOperator.entrySet()) {
        long operator;
        try {
          operator = Long.parseLong(String.valueOf(e.getKey()));
        } catch (NumberFormatException notAnOperator) {
          continue;
        }
        List<List<String>> partitions = new ArrayList<>();
        if (e.getValue() instanceof List<?> ps) {
          for (Object p : ps) {
            List<String> stores = new ArrayList<>();
            if (p instanceof List<?> ss) {
              for (Object s : ss) {
                stores.add(s == null ? null : String.valueOf(s));
              }
            }
            partitions.add(stores);
          }
        }
        ids.put(operator, partitions);
      }
    }
    return new Commit(lines[0].trim(), asLong(meta.get("nextBatchWatermarkMs")), ids);
  }

  private static Long asLong(Object o) {
    return o instanceof Number n ? n.longValue() : null;
  }
}
