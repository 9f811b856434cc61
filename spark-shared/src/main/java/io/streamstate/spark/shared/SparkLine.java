package io.streamstate.spark.shared;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;

/**
 * The Spark line (major.minor) this jar was built for, checked against the running Spark by the
 * constructor of every class Spark instantiates by name (the provider, the checkpoint file manager,
 * the commit protocol). A jar of another line fails later with a linkage error deep inside a task;
 * this fails at once with one message naming both versions and the artifact to use instead.
 *
 * <p>Shared by every line's adapter: the line itself is the adapter's. Each adapter module writes
 * {@value #RESOURCE} at build time (resource filtering of {@code spark.version} and {@code
 * scala.binary.version}), and its runtime jar bundles this class with it. The resource is read on
 * first use, not when the class loads, so this module's tests run without an adapter.
 */
public final class SparkLine {
  /**
   * The classpath resource (absolute) in which the adapter module records the Spark and Scala
   * binary versions it compiles against.
   */
  public static final String RESOURCE = "/io/streamstate/spark/spark-line.properties";

  private SparkLine() {}

  /** The Spark version the adapter was compiled against, e.g. {@code 4.2.0}. */
  public static String builtFor() {
    return BuiltLine.SPARK;
  }

  /** The Scala binary version the adapter was compiled against, e.g. {@code 2.13}. */
  public static String builtForScala() {
    return BuiltLine.SCALA;
  }

  /**
   * The oldest release of the line the adapter supports, e.g. {@code 4.0.1} (4.0.0 lacks a class
   * the 4.0 adapter returns); the line's {@code .0} release unless the adapter says otherwise.
   */
  public static String minimumRelease() {
    return BuiltLine.MINIMUM;
  }

  /** The adapter's {@value #RESOURCE}, read once. */
  private static final class BuiltLine {
    static final String SPARK;
    static final String SCALA;
    static final String MINIMUM;

    static {
      Properties p = new Properties();
      try (InputStream in = SparkLine.class.getResourceAsStream(RESOURCE)) {
        if (in == null) {
          throw new IllegalStateException(
              "streamstate: " + RESOURCE + " is missing from the jar; the jar is damaged");
        }
        p.load(in);
      } catch (IOException e) {
        throw new UncheckedIOException("streamstate: cannot read " + RESOURCE, e);
      }
      SPARK = p.getProperty("spark.version");
      SCALA = p.getProperty("scala.binary.version");
      String minimum = p.getProperty("spark.minimum.version", "");
      MINIMUM = minimum.isBlank() || minimum.startsWith("${") ? line(SPARK) + ".0" : minimum;
    }
  }

  /**
   * Fails if the running Spark is of another line than the one this jar was built for.
   *
   * @throws IllegalStateException naming both versions and the artifact to use
   */
  public static void checkRunningSpark() {
    String problem = RunningLine.PROBLEM;
    if (problem != null) {
      throw new IllegalStateException(problem);
    }
  }

  /** The running Spark's verdict, computed once (on first use: a JVM runs one Spark). */
  private static final class RunningLine {
    static final String PROBLEM =
        mismatch(
            runningSparkVersion(),
            runningScalaVersion(),
            builtFor(),
            builtForScala(),
            minimumRelease());
  }

  /**
   * Why a jar built for Spark {@code builtFor} with Scala {@code builtForScala} (binary version),
   * supporting the line from release {@code minimum} on, cannot run on Spark {@code running} with
   * Scala {@code runningScala}, or null if it can (same major.minor line and Scala binary version,
   * and not older than {@code minimum}).
   */
  static String mismatch(
      String running, String runningScala, String builtFor, String builtForScala, String minimum) {
    String runningLine = line(running);
    String builtLine = line(builtFor);
    String runningScalaBinary = scalaBinary(runningScala);
    String use = ". Use io.streamstate:" + artifact(runningLine, runningScalaBinary) + " instead.";
    if (!runningLine.equals(builtLine)) {
      return "streamstate: this jar ("
          + artifact(builtLine, builtForScala)
          + ") was built for Spark "
          + builtFor
          + " (line "
          + builtLine
          + "), but the running Spark is "
          + running
          + " (line "
          + runningLine
          + ")"
          + use;
    }
    if (!runningScalaBinary.equals(builtForScala)) {
      return "streamstate: this jar ("
          + artifact(builtLine, builtForScala)
          + ") was built for Scala "
          + builtForScala
          + ", but the running Spark "
          + running
          + " uses Scala "
          + runningScala
          + use;
    }
    if (compareReleases(running, minimum) < 0) {
      return "streamstate: this jar ("
          + artifact(builtLine, builtForScala)
          + ") supports Spark "
          + minimum
          + " and later releases of line "
          + builtLine
          + ", but the running Spark is "
          + running
          + ". Upgrade Spark to "
          + minimum
          + " or later.";
    }
    return null;
  }

  /** Orders {@code 4.0.1} before {@code 4.0.10}; a suffix ({@code -SNAPSHOT}) is ignored. */
  static int compareReleases(String a, String b) {
    String[] x = a.split("-", 2)[0].split("\\.");
    String[] y = b.split("-", 2)[0].split("\\.");
    for (int i = 0; i < Math.max(x.length, y.length); i++) {
      int c = Integer.compare(number(x, i), number(y, i));
      if (c != 0) {
        return c;
      }
    }
    return 0;
  }

  private static int number(String[] parts, int i) {
    if (i >= parts.length) {
      return 0;
    }
    try {
      return Integer.parseInt(parts[i]);
    } catch (NumberFormatException e) {
      return 0;
    }
  }

  /** The artifact name of a line and Scala binary version (docs/spark-lines.md). */
  static String artifact(String line, String scalaBinary) {
    return "streamstate-spark-runtime-" + line + "_" + scalaBinary;
  }

  /** {@code 4.2.0} and {@code 4.2.0-SNAPSHOT} are line {@code 4.2}. */
  static String line(String version) {
    String[] parts = version.split("[.-]");
    if (parts.length < 2) {
      return version;
    }
    return parts[0] + "." + parts[1];
  }

  /** {@code 2.12.18} is {@code 2.12}. */
  static String scalaBinary(String scalaVersion) {
    return line(scalaVersion);
  }

  /** {@code org.apache.spark.SPARK_VERSION}, read without linking to anything line-specific. */
  static String runningSparkVersion() {
    try {
      Class<?> pkg = Class.forName("org.apache.spark.package$");
      Object module = pkg.getField("MODULE$").get(null);
      return (String) pkg.getMethod("SPARK_VERSION").invoke(module);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException(
          "streamstate: cannot read the running Spark's version (org.apache.spark.SPARK_VERSION)",
          e);
    }
  }

  static String runningScalaVersion() {
    try {
      Class<?> props = Class.forName("scala.util.Properties");
      return (String) props.getMethod("versionNumberString").invoke(null);
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("streamstate: cannot read the running Scala's version", e);
    }
  }
}
