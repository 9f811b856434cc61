package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * What a JVM says about its configuration, captured through the warnings' sink (the spark module's
 * {@code ConfigWarningsLogTest} checks the same messages reach Spark's log).
 */
class ConfigWarningsTest {
  private static final String PREFIX = StreamStateSettings.PREFIX;

  private final List<String> log = new ArrayList<>();
  private final ConfigWarnings warnings =
      new ConfigWarnings(
          new ConfigWarnings.Sink() {
            @Override
            public void warn(String message) {
              log.add("WARN " + message);
            }

            @Override
            public void info(String message) {
              log.add("INFO " + message);
            }
          });

  @Test
  void anUnknownKeyIsNamedOnceWithTheKeyMeant() {
    Map<String, String> confs =
        Map.of(
            PREFIX + "logJurnal.enabled",
            "true",
            StreamStateSettings.LOCK_TIMEOUT_MS,
            "1000",
            "spark.sql.streaming.stateStore.minDeltasForSnapshot",
            "5");

    StreamStateSettings.parse(confs, 1, 1, warnings);
    StreamStateSettings.parse(confs, 1, 1, warnings);

    assertThat(log)
        .containsExactly(
            "WARN Unknown configuration key "
                + PREFIX
                + "logJurnal.enabled (ignored); did you mean "
                + StreamStateSettings.LOG_JOURNAL
                + "? Every key: docs/configuration.md");
  }

  @Test
  void theSuggestionIsTheNearestKeyIgnoringCase() {
    assertThat(StreamStateKeys.closest(PREFIX + "memorycapbytes"))
        .map(ConfigKey::name)
        .contains(StreamStateSettings.MEMORY_CAP_BYTES);
    assertThat(StreamStateKeys.closest(PREFIX + "hedge.floorMillis"))
        .map(ConfigKey::name)
        .contains(StreamStateSettings.HEDGE_FLOOR_MS);
    assertThat(StreamStateKeys.closest(PREFIX + "groupCommit.journal.rollByte"))
        .map(ConfigKey::name)
        .contains(StreamStateSettings.GROUP_COMMIT_JOURNAL_ROLL_BYTES);
    assertThat(StreamStateKeys.closest(PREFIX + "somethingElseEntirely")).isEmpty();
  }

  @Test
  void aKeyNothingResemblesIsStillNamed() {
    warnings.checkKeys(List.of(PREFIX + "somethingElseEntirely"));

    assertThat(log)
        .containsExactly(
            "WARN Unknown configuration key "
                + PREFIX
                + "somethingElseEntirely (ignored); no key of ours is close Every key:"
                + " docs/configuration.md");
  }

  @Test
  void everyKnownKeyPassesSilently() {
    warnings.checkKeys(StreamStateKeys.sqlKeys().stream().map(ConfigKey::name).toList());
    warnings.checkKeys(List.of("spark.sql.streaming.stateStore.providerClass", "fs.defaultFS"));

    assertThat(log).isEmpty();
  }

  @Test
  void aProcessWideValueAnotherStoreAskedForIsNamedOnceWithBothValues() {
    warnings.checkProcessWide(StreamStateSettings.MEMORY_CAP_BYTES, "268435456", "268435456");
    warnings.checkProcessWide(StreamStateSettings.MEMORY_CAP_BYTES, "268435456", "1073741824");
    warnings.checkProcessWide(StreamStateSettings.MEMORY_CAP_BYTES, "268435456", "1073741824");

    assertThat(log)
        .containsExactly(
            "WARN "
                + StreamStateSettings.MEMORY_CAP_BYTES
                + " is one per JVM and 268435456 is in force (the first store opened here fixed"
                + " it): this store's 1073741824 is ignored. Set the same value for every query"
                + " of an executor");
  }

  @Test
  void sparksCodecIsNamedOnceWhenItIsNotTheDefault() {
    String key = ConfigWarnings.SPARK_COMPRESSION_CODEC;
    StreamStateSettings.parse(Map.of(key, "lz4"), 1, 1, warnings);
    StreamStateSettings.parse(Map.of(key, "LZ4"), 1, 1, warnings);
    assertThat(log)
        .as("lz4 is Spark's default, which Spark writes back on every restart")
        .isEmpty();

    StreamStateSettings zstd = StreamStateSettings.parse(Map.of(key, "zstd"), 1, 1, warnings);
    StreamStateSettings.parse(Map.of(key, "zstd"), 1, 1, warnings);

    assertThat(zstd.storeOptions().changelogCodec())
        .as("our changelog codec is ours to set, not Spark's")
        .isEqualTo(
            StreamStateSettings.parse(Map.of(), 1, 1, warnings).storeOptions().changelogCodec());
    assertThat(log)
        .containsExactly(
            "INFO "
                + key
                + "=zstd applies to Spark's own state store providers, not to io.streamstate's:"
                + " our changelogs use "
                + StreamStateSettings.CHANGELOG_CODEC
                + " (lz4, deflate or none), our snapshots RocksDB's LZ4 blocks (docs/configuration.md,"
                + " \"Spark's settings\")");
  }
}
