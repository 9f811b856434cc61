package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A query's checkpoint moves from this Spark line to another (3.5 to 4.2): the query runs on this
 * line with our provider and checkpoint file manager, stops, and resumes on Spark 4.2 from the same
 * checkpoint with the same configuration. Nothing of its state is lost or counted twice: every
 * key's total after the move equals a plain-Java sum over all input, the resumed run's batches
 * continue the old ones, and the whole output equals, batch for batch, that of an uninterrupted run
 * of the same input on 4.2. Each run is a child JVM with its line's classpath and runtime jar
 * ({@code CheckpointMoveMain}, from each line module's test classes). Run by the spark-cross-line
 * module (its pom sets the properties); elsewhere skipped.
 */
class CheckpointMoveIT {
  /** By name: compiled by each line module against its Spark, never in this test's module. */
  private static final String CHECKPOINT_MOVE_MAIN = "io.streamstate.spark.CheckpointMoveMain";

  @TempDir Path work;

  @Test
  void aCheckpointWrittenOnThisLineResumesOnTheOtherWithItsState() throws Exception {
    String thisJar = System.getProperty("streamstate.thisLineJar");
    String thisClasspath = System.getProperty("streamstate.thisLineClasspathFile");
    String otherJar = System.getProperty("streamstate.otherLineJar");
    String otherClasspath = System.getProperty("streamstate.otherLineClasspathFile");
    String thisTestClasses = System.getProperty("streamstate.thisLineTestClasses");
    String otherTestClasses = System.getProperty("streamstate.otherLineTestClasses");
    assumeTrue(
        thisJar != null && otherJar != null && thisTestClasses != null && otherTestClasses != null,
        "set by the spark-cross-line module only");

    Path input = Files.createDirectories(work.resolve("input"));
    Path output = work.resolve("output.txt");
    String checkpoint = work.resolve("checkpoint").toUri().toString();
    Map<String, Long> expected = new TreeMap<>();
    write(input, 1, expected, "a", 1, "b", 2, "c", 3);
    write(input, 2, expected, "a", 10, "d", 4, "b", 20);

    String first =
        runChild(
            SparkLineProbe.classpathOf(thisClasspath),
            thisJar,
            Paths.get(thisTestClasses),
            checkpoint,
            input,
            output);
    assertThat(first).contains("CHECKPOINT-MOVE ran on Spark 3.5");
    List<String> before = Files.readAllLines(output, StandardCharsets.UTF_8);
    assertThat(before).as("two batches on this line").allMatch(l -> l.matches("[01] .*"));

    write(input, 3, expected, "a", 100, "e", 5);
    write(input, 4, expected, "c", 30, "e", 50, "b", 200);
    String second =
        runChild(
            SparkLineProbe.classpathOf(otherClasspath),
            otherJar,
            Paths.get(otherTestClasses),
            checkpoint,
            input,
            output);
    assertThat(second).contains("CHECKPOINT-MOVE ran on Spark 4.");

    List<String> all = Files.readAllLines(output, StandardCharsets.UTF_8);
    List<String> after = all.subList(before.size(), all.size());
    assertThat(after).as("the resumed run's batches continue").allMatch(l -> l.matches("[23] .*"));
    Map<String, Long> totals = new TreeMap<>();
    for (String line : all) {
      String[] f = line.split(" ");
      totals.put(f[1], Long.parseLong(f[2])); // batches in order: the last total wins
    }
    assertThat(totals).isEqualTo(expected);
    assertThat(after).contains("2 a 111", "3 b 222", "3 c 33");

    // The same input, uninterrupted, on the other line: the same output, batch for batch.
    Path referenceOutput = work.resolve("reference.txt");
    runChild(
        SparkLineProbe.classpathOf(otherClasspath),
        otherJar,
        Paths.get(otherTestClasses),
        work.resolve("reference-checkpoint").toUri().toString(),
        input,
        referenceOutput);
    List<String> reference = Files.readAllLines(referenceOutput, StandardCharsets.UTF_8);
    assertThat(sorted(all)).isEqualTo(sorted(reference));
    try (Stream<Path> files = Files.walk(work.resolve("checkpoint").resolve("state"))) {
      List<String> names = files.map(p -> p.getFileName().toString()).toList();
      assertThat(names)
          .as("our provider's files (group commit journals), none of Spark's providers'")
          .anyMatch(n -> n.endsWith(".journal"))
          .noneMatch(n -> n.matches("\\d+\\.(delta|snapshot|zip|changelog)"));
    }
  }

  private static List<String> sorted(List<String> lines) {
    List<String> copy = new ArrayList<>(lines);
    copy.sort(null);
    return copy;
  }

  /** Writes input file {@code n} with the given key/value pairs and adds them to the model. */
  private static void write(Path dir, int n, Map<String, Long> model, Object... keyValues)
      throws Exception {
    List<String> lines = new ArrayList<>();
    for (int i = 0; i < keyValues.length; i += 2) {
      String key = (String) keyValues[i];
      long value = ((Integer) keyValues[i + 1]).longValue();
      lines.add("{\"key\":\"" + key + "\",\"value\":" + value + "}");
      model.merge(key, value, Long::sum);
    }
    Path tmp = dir.resolveSibling("part-" + n + ".json.tmp");
    Files.write(tmp, lines, StandardCharsets.UTF_8);
    // The file source takes files in modification-time order: one second apart, in file order.
    Files.setLastModifiedTime(tmp, FileTime.fromMillis(1_700_000_000_000L + n * 1000L));
    Files.move(tmp, dir.resolve("part-" + n + ".json")); // appears whole to the file source
  }

  private String runChild(
      List<String> classpath,
      String jar,
      Path testClasses,
      String checkpoint,
      Path input,
      Path output)
      throws Exception {
    List<String> full = new ArrayList<>(classpath);
    full.add(jar);
    return SparkLineProbe.runMain(
        full,
        testClasses,
        CHECKPOINT_MOVE_MAIN,
        List.of(checkpoint, input.toString(), output.toString()),
        work,
        Duration.ofMinutes(5));
  }
}
