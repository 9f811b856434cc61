package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * docs/configuration.md is what {@link ConfigReference} writes from {@link StreamStateKeys}, and
 * {@link StreamStateKeys} describes every key {@link StreamStateSettings} names. Rewrite the file
 * with {@value #REGENERATE}.
 */
class ConfigReferenceTest {
  static final String REGENERATE =
      "mvn -o -q verify -pl spark-shared -am -Dtest=ConfigReferenceTest"
          + " -Dsurefire.failIfNoSpecifiedTests=false -Dconfig.reference.write=true";

  /** The committed reference (tests run in the module's directory). */
  private static final Path REFERENCE = Paths.get("..", "docs", "configuration.md");

  @Test
  void theCommittedReferenceIsWhatTheKeysGenerate() throws IOException {
    String generated = ConfigReference.markdown();
    if (Boolean.getBoolean("config.reference.write")) {
      Files.writeString(REFERENCE, generated, StandardCharsets.UTF_8);
    }
    String committed =
        Files.exists(REFERENCE) ? Files.readString(REFERENCE, StandardCharsets.UTF_8) : "";

    assertThat(committed)
        .as(
            "docs/configuration.md differs from the keys in StreamStateKeys; rewrite it with: "
                + REGENERATE)
        .isEqualTo(generated);
  }

  @Test
  void everyKeyConstantIsDescribedAndEveryDescriptionNamesAConstant() throws Exception {
    List<String> constants = new ArrayList<>();
    for (Field f : StreamStateSettings.class.getFields()) {
      if (Modifier.isStatic(f.getModifiers())
          && f.getType() == String.class
          && f.get(null) instanceof String name
          && name.startsWith(StreamStateSettings.PREFIX)
          && !name.equals(StreamStateSettings.PREFIX)) {
        constants.add(name);
      }
    }
    List<String> described = StreamStateKeys.sqlKeys().stream().map(ConfigKey::name).toList();

    assertThat(described).doesNotHaveDuplicates().containsAll(constants);
    assertThat(constants)
        .as("every described key but the hadoop module's has a constant in StreamStateSettings")
        .containsExactlyInAnyOrderElementsOf(
            described.stream()
                .filter(
                    n -> !n.equals(io.streamstate.hadoop.HadoopStorages.SPARK_ALLOW_SINGLE_WRITER))
                .toList());
  }

  @Test
  void everyDocumentedDefaultIsReadAsTheKeysOwnDefault() {
    for (ConfigKey key : StreamStateKeys.sqlKeys()) {
      if (key.defaultValue() == null) {
        assertThat(key.defaultDoc()).as(key.name()).isNotBlank();
        continue;
      }
      // A default shown with its unit ("2min (120000)") must read as the value it stands for.
      String shown = key.defaultDoc().split(" ")[0];
      if (key.type() == ConfigKey.Type.SIZE
          || key.type() == ConfigKey.Type.DURATION
          || key.type() == ConfigKey.Type.COUNT) {
        assertThat(key.readLong(java.util.Map.of(key.name(), shown)))
            .as(key.name() + " shown as " + key.defaultDoc())
            .isEqualTo(key.readLong(java.util.Map.of()));
      } else {
        assertThat(shown).as(key.name()).isEqualTo(key.defaultValue());
      }
    }
  }
}
