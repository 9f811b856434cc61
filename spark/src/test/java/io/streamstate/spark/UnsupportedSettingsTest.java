package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * Spark settings that change how its providers encode rows, which ours does not do, are refused by
 * name at {@code init} instead of being ignored: Avro encoding and Spark 4.2's row checksum. Their
 * defaults (and setting them to their defaults) are accepted.
 */
class UnsupportedSettingsTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType);

  /** Under target/, not a @TempDir: a store's storage clock may still probe after close. */
  private final Path work = TestSessions.newWorkDir(UnsupportedSettingsTest.class);

  private void init(Map<String, String> settings) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve("local").toString());
    settings.forEach(sqlConf::setConfString);
    Configuration hadoopConf = new Configuration();
    hadoopConf.set(StreamExecution.RUN_ID_KEY(), UUID.randomUUID().toString());
    StreamStateProvider provider = new StreamStateProvider();
    try {
      provider.init(
          new StateStoreId(
              "file://" + work.resolve("state").toAbsolutePath(),
              0,
              0,
              StateStoreId.DEFAULT_STORE_NAME()),
          KEY,
          VALUE,
          new NoPrefixKeyStateEncoderSpec(KEY),
          false,
          new StateStoreConf(sqlConf, scala.collection.immutable.Map$.MODULE$.empty()),
          hadoopConf,
          false,
          Option.empty());
    } finally {
      provider.close();
    }
  }

  @Test
  void avroEncodingIsRefusedNamingTheKey() {
    assertThatThrownBy(() -> init(Map.of(StreamStateProvider.SPARK_ENCODING_FORMAT, "avro")))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("spark.sql.streaming.stateStore.encodingFormat=avro")
        .hasMessageContaining("=unsaferow (the default)");
  }

  @Test
  void rowChecksumIsRefusedNamingTheKey() {
    assertThatThrownBy(() -> init(Map.of(StreamStateProvider.SPARK_ROW_CHECKSUM, "true")))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("spark.sql.streaming.stateStore.rowChecksum.enabled=true")
        .hasMessageContaining("=false (the default)");
  }

  @Test
  void theDefaultsAndSettingThemExplicitlyAreAccepted() {
    assertThatCode(() -> init(Map.of())).doesNotThrowAnyException();
    assertThatCode(
            () ->
                init(
                    Map.of(
                        StreamStateProvider.SPARK_ENCODING_FORMAT, "unsaferow",
                        StreamStateProvider.SPARK_ROW_CHECKSUM, "false")))
        .doesNotThrowAnyException();
  }
}
