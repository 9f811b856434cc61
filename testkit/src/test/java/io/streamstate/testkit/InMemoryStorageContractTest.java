package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.RetryableException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.Storage;
import org.junit.jupiter.api.Test;

class InMemoryStorageContractTest extends StorageContractTests {
  @Override
  protected Storage newStorage() {
    return new InMemoryStorage();
  }

  @Test
  void fencingStopsALiveWriterAndFreezesTheFile() {
    InMemoryStorage memory = (InMemoryStorage) storage;
    AppendableFile writer = memory.createAppendable("log.journal");
    writer.append("one".getBytes(UTF_8));

    memory.fence("log.journal");

    assertThatThrownBy(() -> writer.append("two".getBytes(UTF_8)))
        .isInstanceOf(RetryableException.class)
        .hasMessageContaining("fenced");
    assertThat(read("log.journal")).isEqualTo("one".getBytes(UTF_8));
  }
}
