package io.streamstate.dstream.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.function.Consumer;

/**
 * A Spark driver (or any main class of this module) in a JVM of its own, as the kill tests and the
 * demo run them: the test class path, the flags Spark needs on Java 17, Spark bound to loopback;
 * its output read line by line (to a log file, a listener, and a tail kept for failure messages);
 * {@link #kill} is {@code kill -9}. Killed on close at the latest.
 */
public final class ChildJvm implements AutoCloseable {
  private static final int TAIL_LINES = 200;

  private final Process process;
  private final Deque<String> tail = new ArrayDeque<>();
  private final Thread reader;

  private ChildJvm(Process process, Path log, Consumer<String> onLine) {
    this.process = process;
    this.reader = new Thread(() -> read(log, onLine), "child-jvm-" + process.pid());
    reader.setDaemon(true);
    reader.start();
  }

  /** A child running {@code mainClass} with {@code args}. */
  public static Builder main(Class<?> mainClass, List<String> args) {
    return new Builder(mainClass, args);
  }

  /** How to start one. */
  public static final class Builder {
    private final Class<?> mainClass;
    private final List<String> args;
    private final List<String> jvmArgs = new ArrayList<>();
    private String heap = "768m";
    private Path log;
    private Consumer<String> onLine = line -> {};

    private Builder(Class<?> mainClass, List<String> args) {
      this.mainClass = mainClass;
      this.args = List.copyOf(args);
    }

    /** The maximum heap ({@code -Xmx}); default 768m. */
    public Builder heap(String value) {
      this.heap = value;
      return this;
    }

    /** More JVM arguments (system properties, GC settings). */
    public Builder jvmArgs(String... values) {
      jvmArgs.addAll(Arrays.asList(values));
      return this;
    }

    /** Writes the child's output (stdout and stderr) to {@code file} too. */
    public Builder log(Path file) {
      this.log = file;
      return this;
    }

    /** Called with each line the child prints, on the reading thread. */
    public Builder onLine(Consumer<String> listener) {
      this.onLine = listener;
      return this;
    }

    public ChildJvm start() throws IOException {
      List<String> command = new ArrayList<>();
      command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      command.addAll(sparkFlags());
      command.add("-Xmx" + heap);
      command.addAll(jvmArgs);
      command.add("-cp");
      command.add(classpath());
      command.add(mainClass.getName());
      command.addAll(args);
      ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
      builder.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
      return new ChildJvm(builder.start(), log, onLine);
    }
  }

  /**
   * The module's classes and test classes, then the test class path's jars (the files failsafe's
   * system properties name); outside failsafe (the demo), this JVM's own class path.
   */
  public static String classpath() throws IOException {
    String dirs = System.getProperty("streamstate.classesDirs");
    String file = System.getProperty("streamstate.testClasspathFile");
    if (dirs == null || file == null) {
      return System.getProperty("java.class.path");
    }
    return dirs.replace(":", File.pathSeparator)
        + File.pathSeparator
        + Files.readString(Path.of(file)).trim();
  }

  /** The flags Spark's launcher passes on Java 17 ({@code streamstate.jvmFlags}). */
  static List<String> sparkFlags() {
    return Arrays.stream(System.getProperty("streamstate.jvmFlags", "").trim().split("\\s+"))
        .filter(s -> !s.isBlank())
        .toList();
  }

  private void read(Path log, Consumer<String> onLine) {
    try (BufferedReader in =
            new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        Writer out = log == null ? Writer.nullWriter() : Files.newBufferedWriter(log)) {
      String line;
      while ((line = in.readLine()) != null) {
        out.write(line);
        out.write('\n');
        out.flush();
        synchronized (tail) {
          tail.addLast(line);
          if (tail.size() > TAIL_LINES) {
            tail.removeFirst();
          }
        }
        onLine.accept(line);
      }
    } catch (IOException e) {
      // The process was killed.
    }
  }

  public Process process() {
    return process;
  }

  public long pid() {
    return process.pid();
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  public int exitValue() {
    return process.exitValue();
  }

  /** The child's last lines of output, for a failure message. */
  public String tail() {
    synchronized (tail) {
      return String.join("\n", tail);
    }
  }

  /** {@code kill -9}, then waits for the process and for its output to be read. */
  public void kill() throws InterruptedException {
    process.destroyForcibly();
    process.waitFor();
    reader.join(10_000);
  }

  /** Waits for the child to end by itself and for its output to be read. */
  public boolean waitFor(long seconds) throws InterruptedException {
    boolean ended = process.waitFor(seconds, java.util.concurrent.TimeUnit.SECONDS);
    if (ended) {
      reader.join(10_000);
    }
    return ended;
  }

  @Override
  public void close() {
    try {
      kill();
    } catch (InterruptedException e) {
      process.destroyForcibly();
      Thread.currentThread().interrupt();
    }
  }
}
