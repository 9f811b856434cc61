package io.streamstate.core.engine.local;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import org.junit.jupiter.api.Test;

class RocksDbVersionTest {
  @Test
  void spark35sAndSpark4sRocksDbAreEnough() {
    assertThat(RocksDbVersion.problem(8, 3, 2, "x")).isNull();
    assertThat(RocksDbVersion.problem(8, 11, 0, "x")).isNull();
    assertThat(RocksDbVersion.problem(9, 8, 4, "x")).isNull();
    assertThat(RocksDbVersion.problem(10, 0, 0, "x")).isNull();
    assertThatCode(RocksDbVersion::check).doesNotThrowAnyException(); // the build's own
  }

  @Test
  void anOlderOneIsRefusedNamingItsVersionAndWhereItCameFrom() {
    assertThat(RocksDbVersion.problem(8, 1, 1, "file:/opt/other/rocksdbjni-8.1.1.jar"))
        .contains("8.3.2 or later")
        .contains("loaded 8.1.1 from file:/opt/other/rocksdbjni-8.1.1.jar");
    assertThat(RocksDbVersion.problem(7, 10, 2, "x")).contains("loaded 7.10.2");
  }
}
