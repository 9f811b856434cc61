package io.streamstate.dstream.state;

import io.streamstate.dstream.IncrementalMapWithState;
import io.streamstate.dstream.StreamStateDStreams;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.spark.api.java.Optional;
import org.apache.spark.api.java.function.Function3;
import org.apache.spark.streaming.State;
import org.apache.spark.streaming.StateSpec;
import org.apache.spark.streaming.api.java.JavaPairDStream;
import scala.Tuple2;

/**
 * The application of the restart tests: running counts per key of {@link OrdinalInput.Kind#COUNTS}
 * (the 3-argument mapping function), each batch's output written per batch ordinal to a file that a
 * re-run overwrites (idempotent output), and a plain-Java model of the whole input.
 */
final class CountingApp {
  private CountingApp() {}

  /** count(key) after this record, with the batch's ordinal: "key=count@ordinal". */
  static final Function3<String, Optional<Integer>, State<Integer>, String> COUNT =
      (key, ordinal, state) -> {
        int count = (state.exists() ? state.get() : 0) + 1;
        state.update(count);
        return key + "=" + count + "@" + ordinal.get();
      };

  static StateSpec<String, Integer, Integer, String> spec(int numPartitions) {
    return StateSpec.function(COUNT).numPartitions(numPartitions);
  }

  /**
   * Runs the counts on {@code input}, writing each batch's output to {@code outDir}; batches of
   * ordinal {@code blockFrom} and later write their output, then never complete.
   */
  static IncrementalMapWithState<String, Integer, String> pipeline(
      JavaPairDStream<String, Integer> input,
      StreamStateDStreams.Options options,
      int numPartitions,
      String outDir,
      long blockFrom) {
    IncrementalMapWithState<String, Integer, String> counts =
        StreamStateDStreams.mapWithState(input, spec(numPartitions), options);
    counts.foreachRDD(
        rdd -> {
          long maxOrdinal = write(outDir, rdd.collect());
          if (maxOrdinal >= blockFrom) {
            Files.writeString(Paths.get(outDir, "blocked"), Long.toString(maxOrdinal));
            Thread.sleep(Long.MAX_VALUE); // a batch that never completes; the driver is killed
          }
        });
    return counts;
  }

  /** Writes the records per ordinal (sorted, one file each, replaced whole); the max ordinal. */
  static long write(String outDir, List<String> records) {
    Map<Long, List<String>> byOrdinal = new TreeMap<>();
    for (String r : records) {
      long ordinal = Long.parseLong(r.substring(r.indexOf('@') + 1));
      byOrdinal.computeIfAbsent(ordinal, o -> new ArrayList<>()).add(r);
    }
    long max = -1;
    try {
      for (Map.Entry<Long, List<String>> e : byOrdinal.entrySet()) {
        List<String> lines = new ArrayList<>(e.getValue());
        lines.sort(null);
        Path target = Paths.get(outDir, String.format("%06d.txt", e.getKey()));
        Path tmp = Paths.get(outDir, target.getFileName() + ".tmp");
        Files.write(tmp, lines);
        Files.move(
            tmp, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        max = Math.max(max, e.getKey());
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return max;
  }

  /** What the output of ordinal {@code ordinal} must be: from a model of the whole input. */
  static List<String> expectedOutput(long ordinal) {
    Map<String, Integer> counts = new HashMap<>();
    List<String> out = new ArrayList<>();
    for (long k = 1; k <= ordinal; k++) {
      for (Tuple2<String, Integer> record : OrdinalInput.data(OrdinalInput.Kind.COUNTS, k)) {
        int count = counts.merge(record._1(), 1, Integer::sum);
        if (k == ordinal) {
          out.add(record._1() + "=" + count + "@" + k);
        }
      }
    }
    out.sort(null);
    return out;
  }

  /** The model's counts after ordinal {@code ordinal}, as "key->count", sorted. */
  static List<String> expectedState(long ordinal) {
    Map<String, Integer> counts = new TreeMap<>();
    for (long k = 1; k <= ordinal; k++) {
      for (Tuple2<String, Integer> record : OrdinalInput.data(OrdinalInput.Kind.COUNTS, k)) {
        counts.merge(record._1(), 1, Integer::sum);
      }
    }
    List<String> out = new ArrayList<>();
    counts.forEach((k, v) -> out.add(k + "->" + v));
    return out;
  }

  /** The output file of {@code ordinal}, or null if absent. */
  static List<String> readOutput(String outDir, long ordinal) throws IOException {
    Path file = Paths.get(outDir, String.format("%06d.txt", ordinal));
    return Files.exists(file) ? Files.readAllLines(file) : null;
  }
}
