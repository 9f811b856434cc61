package io.streamstate.spark;

import io.streamstate.spark.shared.ConfigKey;
import io.streamstate.spark.shared.StreamStateKeys;
import org.apache.spark.internal.config.TypedConfigBuilder;
import org.apache.spark.sql.internal.SQLConf$;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Our SQL keys ({@link StreamStateKeys#sqlKeys()}) registered with Spark's SQL configuration, so
 * that {@code SET -v} lists each with its default and meaning beside Spark's own keys.
 *
 * <p>Spark's public way in is {@code SQLConf.buildConf(key)}: the entry a builder creates registers
 * itself in Spark's table of SQL keys (the same table {@code SET -v} lists). {@code
 * SQLConf.register} itself is private. The API is the same on every Spark line we build for (3.5 to
 * 4.2), so this class is compiled once for all.
 *
 * <p>Registering changes nothing about how values are read, on purpose:
 *
 * <ul>
 *   <li>each entry is a string entry: Spark accepts any value for our keys, as it did for an
 *       unknown key, and our reader ({@code StreamStateSettings}) alone parses and checks it, with
 *       its own messages;
 *   <li>Spark hands a provider ({@code StateStoreConf.sqlConfs}) and a checkpoint file manager (the
 *       session's Hadoop configuration) only the SQL confs a user set, never an entry's default, so
 *       an unset key still takes the default our reader computes (some are computed from the
 *       executor, which a registered default could not express: those are registered without a
 *       default, their rule in the doc).
 * </ul>
 *
 * <p>Once per JVM: a key Spark already knows (registered by this class, or by a copy of it in
 * another class loader) is skipped. Our provider, our checkpoint file managers and our metrics
 * plugin call {@link #register()} when their class is loaded, so the keys are listed in a driver
 * that uses any of them; in local mode the driver is the executor.
 */
public final class SqlConfEntries {
  private static final Logger LOG = LoggerFactory.getLogger(SqlConfEntries.class);

  private static boolean registered;

  private SqlConfEntries() {}

  /**
   * Registers every SQL key of ours that Spark's SQL configuration does not know yet. Never fails
   * its caller: registering only documents the keys, so a failure is logged at WARN (once per class
   * loader) and the keys work as before.
   */
  public static synchronized void register() {
    if (registered) {
      return;
    }
    registered = true;
    try {
      for (ConfigKey key : StreamStateKeys.sqlKeys()) {
        registerIfUnknown(key);
      }
    } catch (RuntimeException e) {
      LOG.warn(
          "streamstate: could not register its keys with Spark's SQL configuration ({}); they work"
              + " as before, but SET -v does not list them",
          e.toString());
    }
  }

  private static void registerIfUnknown(ConfigKey key) {
    SQLConf$ sqlConf = SQLConf$.MODULE$;
    if (sqlConf.containsConfigKey(key.name())) {
      return;
    }
    TypedConfigBuilder<String> builder =
        sqlConf.buildConf(key.name()).doc(doc(key)).version(version()).stringConf();
    try {
      if (key.defaultValue() == null) {
        builder.createOptional();
      } else {
        builder.createWithDefaultString(key.defaultValue());
      }
    } catch (IllegalArgumentException e) {
      // Spark's "already registered": a copy of this class in another class loader got there
      // between the check above and here. The key is registered, which is all we want.
      LOG.debug("{} registered concurrently: {}", key.name(), e.getMessage());
    }
  }

  /** The meaning {@code SET -v} shows: the reference's text, with type, scope and default. */
  static String doc(ConfigKey key) {
    String doc = key.doc().endsWith(".") ? key.doc() : key.doc() + ".";
    return "streamstate: "
        + doc
        + " Type: "
        + key.type().label()
        + ". Scope: "
        + key.scope().label()
        + ". Default: "
        + (key.defaultDoc().isEmpty() ? "none" : key.defaultDoc())
        + ". Every key: docs/configuration.md.";
  }

  /** The "since" column of {@code SET -v}: our version, where the jar's manifest names it. */
  private static String version() {
    String version = SqlConfEntries.class.getPackage().getImplementationVersion();
    return version == null ? "streamstate" : "streamstate " + version;
  }
}
