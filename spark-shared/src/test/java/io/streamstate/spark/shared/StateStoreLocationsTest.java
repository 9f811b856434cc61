package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.storage.LocalStorage;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A store's storage and prefix from the fields of Spark's {@code StateStoreId}. */
class StateStoreLocationsTest {
  @TempDir java.nio.file.Path work;

  private final StateStoreLocations locations = new StateStoreLocations() {};
  private final Configuration conf = new Configuration();

  /** The state root as Spark passes it: a Hadoop path's string. */
  private String root() {
    return new Path(work.resolve("cp/state").toUri()).toString();
  }

  @Test
  void storesOfOneStateRootArePrefixesOfOneStorageAsSparksDirectories() {
    StateStoreLocations.Location unnamed =
        locations.resolve(root(), 0, 3, null, new Path(root(), "0/3"), conf);
    StateStoreLocations.Location named =
        locations.resolve(
            root(), 1, 2, "left-keyToNumValues", new Path(root(), "1/2/left-keyToNumValues"), conf);

    assertThat(unnamed.prefix()).isEqualTo("0/3/");
    assertThat(named.prefix()).isEqualTo("1/2/left-keyToNumValues/");
    assertThat(named.storage()).isSameAs(unnamed.storage()).isInstanceOf(LocalStorage.class);
  }

  @Test
  void aStoreDirectorySparkComposedDifferentlyIsARootOfItsOwn() {
    Path elsewhere = new Path(work.resolve("other/0/3").toUri());
    StateStoreLocations.Location location = locations.resolve(root(), 0, 3, null, elsewhere, conf);
    StateStoreLocations.Location usual =
        locations.resolve(root(), 0, 4, null, new Path(root(), "0/4"), conf);

    assertThat(location.prefix()).isEmpty();
    assertThat(location.storage()).isNotSameAs(usual.storage());
  }

  @Test
  void resolvingAStoreMakesItsDirectoryAsSparksProvidersDo() {
    locations.resolve(root(), 0, 3, null, new Path(root(), "0/3"), conf);
    locations.resolve(
        root(), 1, 2, "left-keyToNumValues", new Path(root(), "1/2/left-keyToNumValues"), conf);

    // Spark's state data source lists partitions by directory and refuses a gap.
    assertThat(work.resolve("cp/state/0/3")).isDirectory().isEmptyDirectory();
    assertThat(work.resolve("cp/state/1/2/left-keyToNumValues")).isDirectory();
  }
}
