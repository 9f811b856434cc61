package io.streamstate.dstream.state;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.net.URI;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class BatchMarkersTest {
  @TempDir Path dir;

  private final StateLocation location =
      new StateLocation(URI.create("file:///unused"), "s", Map.of(), null);

  @Test
  void newestVerifyingMarkerWinsAndATornOneIsDeleted() {
    Storage storage = new LocalStorage(dir);
    BatchMarkers markers = new BatchMarkers(storage, location);
    assertThat(markers.newest()).isEmpty();
    markers.write(new BatchMarker(1, 100, new long[] {-1L, 7L}));
    markers.write(new BatchMarker(2, 200, new long[] {Long.MIN_VALUE, 9L}));
    byte[] torn = BatchMarkers.encode(new BatchMarker(3, 300, new long[] {1, 2}));
    storage.create(
        markers.fileName(3), ContentWriter.ofBytes(Arrays.copyOf(torn, torn.length - 5)));

    // A reader skips it (it may be being written) and leaves it; the writer at its start deletes
    // it.
    assertThat(markers.newest()).contains(new BatchMarker(2, 200, new long[] {Long.MIN_VALUE, 9L}));
    assertThat(storage.list(location.batchesPrefix())).hasSize(3);
    assertThat(markers.newestDeletingTorn())
        .contains(new BatchMarker(2, 200, new long[] {Long.MIN_VALUE, 9L}));
    assertThat(storage.list(location.batchesPrefix())).hasSize(2);
    markers.write(new BatchMarker(3, 300, new long[] {1, 2})); // the torn name is free again
    assertThat(markers.newest().orElseThrow().version()).isEqualTo(3);
  }

  @Test
  void rejectsASecondDifferentMarkerOfAVersion() {
    BatchMarkers markers = new BatchMarkers(new LocalStorage(dir), location);
    markers.write(new BatchMarker(1, 100, new long[] {5}));
    markers.write(new BatchMarker(1, 100, new long[] {5})); // same: a no-op
    assertThatThrownBy(() -> markers.write(new BatchMarker(1, 100, new long[] {6})))
        .isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("Cannot mark batch version 1 of state s at file:///unused")
        .hasMessageContaining("another application");
  }
}
