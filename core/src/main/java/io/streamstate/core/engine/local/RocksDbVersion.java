package io.streamstate.core.engine.local;

import io.streamstate.core.error.UnsupportedException;
import java.security.CodeSource;
import org.rocksdb.RocksDB;

/**
 * The oldest RocksDB the engine runs on, checked before any store uses RocksDB. The engine uses the
 * rocksdbjni the running Spark ships, never a copy of its own, and every Spark line ships another:
 * Spark 3.5 ships 8.3.2, Spark 4.0 to 4.2 ship 9.8.4. The engine's code is compiled against 9.8.4
 * but calls only what 8.3.2 has too (the build compiles and tests core against 8.3.2 as well,
 * docs/spark-lines.md); an older library would fail later with a linkage error inside a task.
 */
public final class RocksDbVersion {
  /** The oldest rocksdbjni the engine calls nothing beyond: Spark 3.5's. */
  public static final String MINIMUM = "8.3.2";

  private static final int MIN_MAJOR = 8;
  private static final int MIN_MINOR = 3;

  /** What is wrong with the loaded library, or null; computed once. */
  private static final String PROBLEM = problemOfLoaded();

  private RocksDbVersion() {}

  /**
   * Loads RocksDB's native library if needed and fails if it is older than {@link #MINIMUM}.
   *
   * @throws UnsupportedException the library is too old, naming its version and where it was loaded
   *     from
   */
  public static void check() {
    if (PROBLEM != null) {
      throw new UnsupportedException(PROBLEM);
    }
  }

  /** Why {@code major.minor.patch} loaded from {@code source} is too old, or null if it is not. */
  static String problem(int major, int minor, int patch, String source) {
    if (major > MIN_MAJOR || (major == MIN_MAJOR && minor >= MIN_MINOR)) {
      return null;
    }
    return "streamstate needs RocksDB (rocksdbjni) "
        + MINIMUM
        + " or later; this JVM loaded "
        + major
        + "."
        + minor
        + "."
        + patch
        + " from "
        + source
        + ". Spark ships its own (3.5: 8.3.2, 4.x: 9.8.4): put no other rocksdbjni on the"
        + " classpath, and use the streamstate jar of the running Spark's line.";
  }

  /** The major version of the loaded library (loading it if needed). */
  static int loadedMajor() {
    RocksDB.loadLibrary();
    return RocksDB.rocksdbVersion().getMajor();
  }

  private static String problemOfLoaded() {
    RocksDB.loadLibrary();
    RocksDB.Version v = RocksDB.rocksdbVersion();
    CodeSource code = RocksDB.class.getProtectionDomain().getCodeSource();
    String source = code == null ? "the class path" : String.valueOf(code.getLocation());
    return problem(v.getMajor(), v.getMinor(), v.getPatch(), source);
  }
}
