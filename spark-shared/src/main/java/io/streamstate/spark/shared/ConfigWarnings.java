package io.streamstate.spark.shared;

import io.streamstate.core.ProcessResources;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a process says about its configuration, each thing once: an unknown key under our prefix
 * (with the key probably meant), a process-wide setting a later store asked to change, Spark's
 * state store codec that we do not honour. Every store and checkpoint file manager reads the
 * configuration, often hundreds of times per query; the user needs each message once per JVM. A
 * component of the process's {@link ProcessResources}; tests make their own with a {@link Sink}.
 */
public final class ConfigWarnings {
  private static final Logger LOG = LoggerFactory.getLogger(ConfigWarnings.class);

  /** Spark's codec of its own providers' delta, snapshot and changelog files. */
  public static final String SPARK_COMPRESSION_CODEC =
      "spark.sql.streaming.stateStore.compression.codec";

  /** Where the messages go: the log, or a test's list. */
  public interface Sink {
    void warn(String message);

    void info(String message);
  }

  private final Sink sink;
  private final Set<String> said = ConcurrentHashMap.newKeySet();

  /** Messages to {@code sink} (tests); {@link #of} logs them. */
  public ConfigWarnings(Sink sink) {
    this.sink = Objects.requireNonNull(sink, "sink");
  }

  /** The process's, logging through slf4j. */
  public static ConfigWarnings of(ProcessResources resources) {
    return resources.component(
        ConfigWarnings.class,
        () ->
            new ConfigWarnings(
                new Sink() {
                  @Override
                  public void warn(String message) {
                    LOG.warn(message);
                  }

                  @Override
                  public void info(String message) {
                    LOG.info(message);
                  }
                }));
  }

  /** Warns once per key of {@code names} that is under our prefix and names no key of ours. */
  public void checkKeys(Iterable<String> names) {
    for (String name : names) {
      if (StreamStateKeys.isUnknown(name) && said.add("unknown " + name)) {
        sink.warn(StreamStateKeys.unknownKeyMessage(name));
      }
    }
  }

  /**
   * Warns, once per key and ignored value, when a store asked for {@code asked} of a process-wide
   * {@code key} while {@code inForce} (what the first store fixed) holds.
   */
  public void checkProcessWide(String key, String inForce, String asked) {
    if (!inForce.equals(asked) && said.add("process-wide " + key + "=" + asked)) {
      sink.warn(
          key
              + " is one per JVM and "
              + inForce
              + " is in force (the first store opened here fixed it): this store's "
              + asked
              + " is ignored. Set the same value for every query of an executor");
    }
  }

  /**
   * Says once per value that Spark's {@value #SPARK_COMPRESSION_CODEC} does not change our files
   * when it is set to anything but Spark's default {@code lz4}. Spark pins that key in every
   * query's offset log and sets it again on restart, so a value there is not proof that a user set
   * it; {@code lz4} (the default) is what our snapshots' RocksDB files use anyway, so only another
   * value is news. Our changelogs take their codec ({@code deflate}, {@code lz4} or {@code none})
   * from our own key only: Spark's key is set in every query's offset log, so following it would
   * turn every query onto {@code lz4} whatever our key says.
   */
  public void checkSparkCodec(Map<String, String> sqlConfs) {
    String codec = sqlConfs.get(SPARK_COMPRESSION_CODEC);
    if (codec == null || codec.isBlank()) {
      return;
    }
    String value = codec.trim();
    if (!value.toLowerCase(Locale.ROOT).equals("lz4") && said.add("codec " + value)) {
      sink.info(
          SPARK_COMPRESSION_CODEC
              + "="
              + value
              + " applies to Spark's own state store providers, not to io.streamstate's:"
              + " our changelogs use "
              + StreamStateSettings.CHANGELOG_CODEC
              + " (lz4, deflate or none), our snapshots RocksDB's LZ4 blocks"
              + " (docs/configuration.md, \"Spark's settings\")");
    }
  }
}
