package io.streamstate.testkit;

import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

class LocalStorageContractTest extends StorageContractTests {
  @TempDir Path root;

  @Override
  protected Storage newStorage() {
    return new LocalStorage(root);
  }
}
