package io.streamstate.bench.spark;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The process the user starts: creates the results folder {@code <out>/<yyyyMMdd-HHmmss>/}, starts
 * one child JVM per round (heap mode: per cell, so that the heap and resident set hold one
 * provider's state only) and waits for it, then writes the {@link Report}. A child has the same
 * class path and JVM flags, {@code -Xmx} from {@code -Dbench.childXmx}, its standard error appended
 * to {@code spark-stderr.log}, and runs a {@link RoundRunner}; it is told which round by {@link
 * BenchSettings#childArgs}.
 */
final class Orchestrator {
  private Orchestrator() {}

  static void run(BenchSettings settings) throws IOException, InterruptedException {
    // Before any round: a variant whose classes this build lacks fails now, not hours later.
    settings.requireClasses();
    RoundPlan plan = new RoundPlan(settings);
    Path base = Paths.get(settings.out).toAbsolutePath();
    Path dir =
        base.resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    Files.createDirectories(dir);
    long start = System.nanoTime();
    System.out.printf(
        "side-by-side benchmark, %s mode: %d round(s), %d cells each, results in %s%n",
        settings.mode, settings.rounds, plan.cells(0).size(), dir);
    for (int round = 0; round < settings.rounds; round++) {
      if (settings.heap()) {
        for (int cell = 0; cell < plan.cells(round).size(); cell++) {
          fork(settings, dir, round, cell);
        }
      } else {
        fork(settings, dir, round, -1);
      }
    }
    long seconds = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - start);
    Report.write(dir, settings, seconds);
    System.out.printf("done in %d s: %s%n", seconds, dir.resolve("results.md"));
  }

  /** Runs {@code round} (heap mode: only its {@code cell}, else -1) in a child JVM. */
  private static void fork(BenchSettings settings, Path dir, int round, int cell)
      throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>();
    cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
    for (String arg : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
      if (!arg.startsWith("-Xmx")
          && !arg.startsWith("-agentlib")
          && !arg.startsWith("-javaagent")) {
        cmd.add(arg);
      }
    }
    cmd.add("-Xmx" + BenchSettings.childXmx());
    cmd.addAll(BenchSettings.childJvmArgs(round, cell));
    cmd.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
    cmd.add("-cp");
    cmd.add(System.getProperty("java.class.path"));
    cmd.add(SideBySideBenchmark.class.getName());
    cmd.addAll(settings.childArgs(round, dir, cell));
    ProcessBuilder pb = new ProcessBuilder(cmd).inheritIO();
    pb.redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("spark-stderr.log").toFile()));
    pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
    int rc = pb.start().waitFor();
    if (rc != 0) {
      System.out.printf(
          "round %d%s: child JVM exited with %d (see spark-stderr.log)%n",
          round, cell >= 0 ? " cell " + cell : "", rc);
    }
  }
}
