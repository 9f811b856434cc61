package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs {@link SparkLineProbeMain} in a child JVM on a given classpath (another Spark line's, plus a
 * runtime jar of ours) and returns what it printed: for the tests that put a jar on the wrong line.
 */
final class SparkLineProbe {
  private SparkLineProbe() {}

  static String run(List<String> classpath, Path work) throws Exception {
    // The probe alone of our test classes: it links to nothing of Spark's.
    Path probeDir = work.resolve("probe");
    Path probeClass =
        probeDir.resolve(SparkLineProbeMain.class.getName().replace('.', '/') + ".class");
    Files.createDirectories(probeClass.getParent());
    Files.copy(
        Paths.get("target", "test-classes")
            .resolve(SparkLineProbeMain.class.getName().replace('.', '/') + ".class"),
        probeClass);
    List<String> fullClasspath = new ArrayList<>(classpath);
    fullClasspath.add(probeDir.toString());

    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(Arrays.asList(System.getProperty("streamstate.jvmFlags").trim().split("\\s+")));
    command.add("-cp");
    command.add(String.join(File.pathSeparator, fullClasspath));
    command.add(SparkLineProbeMain.class.getName());
    command.add(work.resolve("checkpoint").toUri().toString());
    Path log = work.resolve("child.log");
    Process child =
        new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
    boolean exited = child.waitFor(2, TimeUnit.MINUTES);
    if (!exited) {
      child.destroyForcibly();
    }
    String output = Files.readString(log, StandardCharsets.UTF_8);
    assertThat(exited).as("child JVM finished; output:%n%s", output).isTrue();
    assertThat(child.exitValue()).as("exit code; output:%n%s", output).isZero();
    return output;
  }

  /** The entries of a classpath file written by the build ({@code build-classpath}). */
  static List<String> classpathOf(String classpathFile) throws Exception {
    return new ArrayList<>(
        Arrays.asList(Files.readString(Paths.get(classpathFile)).trim().split(File.pathSeparator)));
  }
}
