package io.streamstate.testkit;

import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.FaultInjectingStorage.Latency;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.io.TempDir;

/** With latency but no errors, the wrapper must be invisible to the contract. */
class FaultInjectingStorageContractTest {

  private static Storage withLatency(Storage delegate) {
    return FaultInjectingStorage.builder(delegate, 20240601L)
        .latency(
            Latency.heavyTailed(
                Duration.ofNanos(200_000), 0.01, Duration.ofMillis(2), Duration.ofMillis(10)))
        .build();
  }

  @Nested
  class OverInMemoryStorage extends StorageContractTests {
    @Override
    protected Storage newStorage() {
      return withLatency(new InMemoryStorage());
    }
  }

  @Nested
  class OverLocalStorage extends StorageContractTests {
    @TempDir Path root;

    @Override
    protected Storage newStorage() {
      return withLatency(new LocalStorage(root));
    }
  }
}
