package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.config.ConfigValues;
import java.util.List;
import org.apache.spark.network.util.JavaUtils;
import org.junit.jupiter.api.Test;

/**
 * Our sizes and durations read as Spark reads its own ({@code JavaUtils.byteStringAsBytes} and
 * {@code timeStringAsMs}, which {@code SparkConf.getSizeAsBytes} and {@code getTimeAsMs} use): the
 * same number for every form Spark accepts, and a refusal wherever Spark refuses.
 */
class ConfigValuesSparkParityTest {
  private static final List<String> SIZES =
      List.of(
          "0",
          "1",
          "268435456",
          "1b",
          "2k",
          "2kb",
          "256m",
          "256mb",
          "1g",
          "1gb",
          "3t",
          "3tb",
          "1p",
          "1pb",
          " 64M ",
          "8G",
          "512KB");

  private static final List<String> DURATIONS =
      List.of(
          "0", "250", "1500us", "999us", "250ms", "2s", "2m", "2min", "3h", "1d", " 10S ", "5MIN",
          "-1", "-2s");

  private static final List<String> BAD_SIZES = List.of("1.5g", "256 MiB", "g", "", "1x", "-1");

  private static final List<String> BAD_DURATIONS = List.of("1.5s", "2 minutes", "s", "", "1y");

  @Test
  void sizesReadAsSparkReadsThem() {
    for (String value : SIZES) {
      assertThat(ConfigValues.parseBytes("k", value))
          .as(value)
          .isEqualTo(JavaUtils.byteStringAsBytes(value));
    }
  }

  @Test
  void durationsReadAsSparkReadsThem() {
    for (String value : DURATIONS) {
      assertThat(ConfigValues.parseMillis("k", value))
          .as(value)
          .isEqualTo(JavaUtils.timeStringAsMs(value));
    }
  }

  @Test
  void whatSparkRefusesIsRefusedNamingTheKey() {
    for (String value : BAD_SIZES) {
      assertThatThrownBy(() -> JavaUtils.byteStringAsBytes(value)).as("Spark: " + value);
      assertThatThrownBy(() -> ConfigValues.parseBytes("size.key", value))
          .as(value)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("size.key");
    }
    for (String value : BAD_DURATIONS) {
      assertThatThrownBy(() -> JavaUtils.timeStringAsMs(value)).as("Spark: " + value);
      assertThatThrownBy(() -> ConfigValues.parseMillis("time.key", value))
          .as(value)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("time.key");
    }
  }
}
