package io.streamstate.testkit;

import io.streamstate.core.storage.Storage;

class InMemoryStorageContractTest extends StorageContractTests {
  @Override
  protected Storage newStorage() {
    return new InMemoryStorage();
  }
}
