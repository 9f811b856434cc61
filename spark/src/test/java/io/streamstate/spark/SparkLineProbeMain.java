package io.streamstate.spark;

import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.Callable;

/**
 * Run in a child JVM on another Spark line's classpath with our runtime jar ({@link
 * CrossLineJarIT}): makes our classes the way Spark makes them (by class name, through the
 * constructor Spark calls) and prints what each did. JDK only: nothing here may link to a Spark
 * line.
 */
public final class SparkLineProbeMain {
  private SparkLineProbeMain() {}

  public static void main(String[] args) {
    report(
        "provider",
        () ->
            Class.forName("io.streamstate.spark.StreamStateProvider")
                .getConstructor()
                .newInstance());
    report(
        "manager",
        () -> {
          Class<?> path = Class.forName("org.apache.hadoop.fs.Path");
          Class<?> conf = Class.forName("org.apache.hadoop.conf.Configuration");
          return Class.forName("io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager")
              .getConstructor(path, conf)
              .newInstance(
                  path.getConstructor(String.class).newInstance(args[0]),
                  conf.getConstructor().newInstance());
        });
  }

  private static void report(String what, Callable<?> make) {
    String outcome;
    try {
      make.call();
      outcome = "made";
    } catch (InvocationTargetException e) {
      outcome = e.getCause().getClass().getName() + ": " + e.getCause().getMessage();
    } catch (Throwable t) {
      outcome = t.getClass().getName() + ": " + t.getMessage();
    }
    System.out.println("PROBE " + what + " -> " + outcome);
  }
}
