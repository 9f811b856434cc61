package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.ProcessResources;
import io.streamstate.core.engine.local.RocksDbMemoryBudget;
import io.streamstate.spark.shared.ConfigWarnings;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.hadoop.conf.Configuration;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Property;
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution;
import org.apache.spark.sql.execution.streaming.state.NoPrefixKeyStateEncoderSpec;
import org.apache.spark.sql.execution.streaming.state.StateStoreConf;
import org.apache.spark.sql.execution.streaming.state.StateStoreId;
import org.apache.spark.sql.internal.SQLConf;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import scala.Option;

/**
 * What the user sees in Spark's log (log4j, as Spark configures it) when the configuration is
 * wrong: the driver's checkpoint file manager names a mistyped key and refuses a non-boolean log
 * journal switch; a store asking for another process-wide memory cap is told which one holds.
 */
class ConfigurationLogTest {
  private static final StructType KEY = new StructType().add("k", DataTypes.StringType);
  private static final StructType VALUE = new StructType().add("v", DataTypes.IntegerType);

  /**
   * Not a {@code @TempDir}: a store's storage clock probes in the background (writing under {@code
   * _clock/} of the state directory) and may still do so after the provider closed, which made
   * JUnit's deletion of a temporary directory fail once; the build's target holds it instead.
   */
  private final Path work = TestSessions.newWorkDir(ConfigurationLogTest.class);

  private final List<String> log = new CopyOnWriteArrayList<>();
  private org.apache.logging.log4j.core.Logger logger;
  private AbstractAppender appender;

  @BeforeEach
  void captureTheLog() {
    logger = (org.apache.logging.log4j.core.Logger) LogManager.getLogger(ConfigWarnings.class);
    appender =
        new AbstractAppender("captured", null, null, true, Property.EMPTY_ARRAY) {
          @Override
          public void append(LogEvent event) {
            log.add(event.getLevel() + " " + event.getMessage().getFormattedMessage());
          }
        };
    appender.start();
    logger.addAppender(appender);
  }

  @AfterEach
  void stopCapturing() {
    logger.removeAppender(appender);
    appender.stop();
  }

  @Test
  void theCheckpointFileManagerNamesAMistypedKeyWithTheKeyMeant() throws Exception {
    Configuration conf = new Configuration();
    String typo = StreamStateConf.PREFIX + "logJurnal.enabled";
    conf.set(typo, "true");
    try (ProcessResources resources = new ProcessResources("config-log-test")) {
      new io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager(
          new org.apache.hadoop.fs.Path(work.toUri()), conf, resources);
      new io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager(
          new org.apache.hadoop.fs.Path(work.toUri()), conf, resources);
    }

    assertThat(log)
        .containsExactly(
            "WARN Unknown configuration key "
                + typo
                + " (ignored); did you mean "
                + StreamStateConf.LOG_JOURNAL
                + "? Every key: docs/configuration.md");
  }

  @Test
  void theCheckpointFileManagerRefusesALogJournalSwitchThatIsNotABoolean() {
    Configuration conf = new Configuration();
    conf.set(StreamStateConf.LOG_JOURNAL, "yes");

    assertThatThrownBy(
            () -> {
              try (ProcessResources resources = new ProcessResources("config-log-test")) {
                new io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager(
                    new org.apache.hadoop.fs.Path(work.toUri()), conf, resources);
              }
            })
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage(
            "Invalid value for "
                + StreamStateConf.LOG_JOURNAL
                + ": 'yes' (expected true or false)");
  }

  @Test
  void aStoreAskingForAnotherMemoryCapIsToldWhichOneHolds() {
    // Whatever cap this JVM's first store fixed (another test's, or this one's own): ask for more.
    long inForce =
        RocksDbMemoryBudget.shared(ProcessResources.shared(), RocksDbMemoryBudget.DEFAULT_CAP_BYTES)
            .capBytes();
    long asked = inForce + (8L << 20);

    openAndCloseAStore(asked);

    assertThat(log)
        .containsExactly(
            "WARN "
                + StreamStateConf.MEMORY_CAP_BYTES
                + " is one per JVM and "
                + inForce
                + " is in force (the first store opened here fixed it): this store's "
                + asked
                + " is ignored. Set the same value for every query of an executor");
  }

  private void openAndCloseAStore(long memoryCapBytes) {
    SQLConf sqlConf = new SQLConf();
    sqlConf.setConfString(StreamStateConf.LOCAL_DIR, work.resolve("local").toString());
    sqlConf.setConfString(StreamStateConf.MEMORY_CAP_BYTES, Long.toString(memoryCapBytes));
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
}
