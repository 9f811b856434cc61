package io.streamstate.spark.reliability;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * A JVM started from this test JVM: its class path (the test class path) and the {@code
 * --add-opens} flags the module's failsafe configuration passes to Spark ({@code
 * streamstate.jvmFlags}), output to a log file.
 */
final class ChildJvm {
  private final Process process;
  private final Path log;

  private ChildJvm(Process process, Path log) {
    this.process = process;
    this.log = log;
  }

  static ChildJvm start(Class<?> mainClass, Path log, String... args) throws IOException {
    List<String> command = new ArrayList<>();
    command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    String flags = System.getProperty("streamstate.jvmFlags", "").trim();
    if (!flags.isEmpty()) {
      command.addAll(Arrays.asList(flags.split("\\s+")));
    }
    command.add("-Xmx1g");
    command.add("-XX:+UseParallelGC");
    command.add("-Duser.timezone=UTC");
    command.add("-cp");
    command.add(System.getProperty("java.class.path"));
    command.add(mainClass.getName());
    command.addAll(Arrays.asList(args));
    ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
    builder.redirectOutput(log.toFile());
    builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    return new ChildJvm(builder.start(), log);
  }

  Process process() {
    return process;
  }

  /** Kills the JVM with SIGKILL (no shutdown hooks, no cleanup) and waits for it to be gone. */
  void killHard() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
  }

  String output() {
    try {
      return Files.readString(log, StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
