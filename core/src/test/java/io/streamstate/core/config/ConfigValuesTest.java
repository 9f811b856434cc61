package io.streamstate.core.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * The value rules every key shares. Sizes and durations are also compared with Spark's own parser
 * value by value in the spark module ({@code ConfigValuesSparkParityTest}); here, the rules Spark
 * does not have or that need no Spark: strict booleans, our unit for a bare number, the message.
 */
class ConfigValuesTest {
  @Test
  void booleansAreTrueOrFalseInAnyCaseAndNothingElse() {
    assertThat(ConfigValues.parseBoolean("k", "true")).isTrue();
    assertThat(ConfigValues.parseBoolean("k", " TRUE ")).isTrue();
    assertThat(ConfigValues.parseBoolean("k", "False")).isFalse();
    for (String bad : new String[] {"ture", "yes", "1", "on", "", "t_rue"}) {
      assertThatThrownBy(() -> ConfigValues.parseBoolean("the.key", bad))
          .as(bad)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessage("Invalid value for the.key: '" + bad + "' (expected true or false)");
    }
  }

  @Test
  void aBareNumberKeepsTheKeysUnitAndUnderscoresGroupDigits() {
    assertThat(ConfigValues.parseBytes("k", "1_073_741_824")).isEqualTo(1L << 30);
    assertThat(ConfigValues.parseBytes("k", "1g")).isEqualTo(ConfigValues.parseBytes("k", "1024m"));
    assertThat(ConfigValues.parseMillis("k", "120000"))
        .isEqualTo(ConfigValues.parseMillis("k", "2min"));
    assertThat(ConfigValues.parseMillis("k", "2m"))
        .isEqualTo(ConfigValues.parseMillis("k", "120s"));
  }

  @Test
  void aWrongSuffixOrFractionIsRefusedNamingTheKeyAndTheForms() {
    assertThatThrownBy(() -> ConfigValues.parseBytes("size.key", "256 MiB"))
        .hasMessageContaining("size.key")
        .hasMessageContaining("'256 MiB'")
        .hasMessageContaining(ConfigValues.SIZE_FORMS);
    assertThatThrownBy(() -> ConfigValues.parseBytes("size.key", "1.5g"))
        .hasMessageContaining("size.key");
    assertThatThrownBy(() -> ConfigValues.parseBytes("size.key", "-1"))
        .hasMessageContaining("size.key");
    assertThatThrownBy(() -> ConfigValues.parseBytes("size.key", "9999999p"))
        .hasMessageContaining("fits 64 bits");
    assertThatThrownBy(() -> ConfigValues.parseMillis("time.key", "2 minutes"))
        .hasMessageContaining("time.key")
        .hasMessageContaining(ConfigValues.DURATION_FORMS);
    assertThatThrownBy(() -> ConfigValues.parseLong("count.key", "2k"))
        .hasMessageContaining("count.key")
        .hasMessageContaining("a whole number");
  }
}
