package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.dstream.StreamStateDStreams.Options;
import java.net.URI;
import java.util.Map;
import org.junit.jupiter.api.Test;

class OptionsTest {
  @Test
  void resolvesLocationNameAndHadoopSettings() {
    StateLocation location =
        Options.at("hdfs://nn:8020/apps/state")
            .name("sessions")
            .hadoopConf("dfs.replication", "2")
            .localDir("/mnt/local")
            .resolve();
    assertThat(location.root()).isEqualTo(URI.create("hdfs://nn:8020/apps/state"));
    assertThat(location.partitionPrefix(3)).isEqualTo("sessions/partitions/00003/");
    assertThat(location.batchesPrefix()).isEqualTo("sessions/batches/");
    assertThat(location.hadoopConf()).isEqualTo(Map.of("dfs.replication", "2"));
    assertThat(location.configuration().get("dfs.replication")).isEqualTo("2");
    assertThat(location.localDir()).isEqualTo("/mnt/local");
  }

  @Test
  void refusesAMissingOrInvalidNameAndARelativeLocation() {
    assertThatThrownBy(() -> Options.at("file:///tmp/state").resolve())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessage("The state at file:///tmp/state needs a name: Options.at(...).name(\"...\")");
    assertThatThrownBy(() -> Options.at("file:///tmp/state").name("a/b").resolve())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("must be letters, digits");
    assertThatThrownBy(() -> Options.at("tmp/state").name("s").resolve())
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("absolute URI with a scheme");
  }
}
