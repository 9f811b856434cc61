package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs a main class of ours in a child JVM on a given classpath (another Spark line's, plus a
 * runtime jar of ours) and returns what it printed: {@link SparkLineProbeMain} for the tests that
 * put a jar on the wrong line, or any other self-contained main ({@link CheckpointMoveIT}).
 */
final class SparkLineProbe {
  private SparkLineProbe() {}

  static String run(List<String> classpath, Path work) throws Exception {
    return runMain(
        classpath,
        Paths.get("target", "test-classes"),
        SparkLineProbeMain.class.getName(),
        List.of(work.resolve("checkpoint").toUri().toString()),
        work,
        Duration.ofMinutes(2));
  }

  /**
   * Runs {@code main}, taken alone from {@code testClasses} (the test classes compiled for the line
   * of {@code classpath}: it must link to nothing else of ours but the runtime jar, which {@code
   * classpath} holds), in a child JVM; returns what it printed. Fails if it does not exit 0 within
   * {@code timeout}.
   */
  static String runMain(
      List<String> classpath,
      Path testClasses,
      String main,
      List<String> args,
      Path work,
      Duration timeout)
      throws Exception {
    Path mainDir = Files.createTempDirectory(work, "main");
    String classFile = main.replace('.', '/') + ".class";
    Files.createDirectories(mainDir.resolve(classFile).getParent());
    if (Files.exists(testClasses.resolve(classFile))) {
      Files.copy(testClasses.resolve(classFile), mainDir.resolve(classFile));
    } else {
      // This line's test classes from a tests jar (spark-it): the class as loaded here.
      try (var in = SparkLineProbe.class.getClassLoader().getResourceAsStream(classFile)) {
        assertThat(in).as("%s in %s or on the test classpath", classFile, testClasses).isNotNull();
        Files.copy(in, mainDir.resolve(classFile));
      }
    }
    List<String> fullClasspath = new ArrayList<>(classpath);
    fullClasspath.add(mainDir.toString());

    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(Arrays.asList(System.getProperty("streamstate.jvmFlags").trim().split("\\s+")));
    command.add("-Xmx1g");
    command.add("-cp");
    command.add(String.join(File.pathSeparator, fullClasspath));
    command.add(main);
    command.addAll(args);
    Path log = Files.createTempFile(work, "child", ".log");
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    Process child = builder.redirectOutput(log.toFile()).start();
    boolean exited = child.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
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
