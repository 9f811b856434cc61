package io.streamstate.testkit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.ConflictException;
import io.streamstate.core.storage.AppendableFile;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class LocalStorageContractTest extends StorageContractTests {
  @TempDir Path root;

  @Override
  protected Storage newStorage() {
    return new LocalStorage(root);
  }

  @Test
  void aLiveWriterCannotBeFencedOnLocalDiskAndIsReportedNamingTheFile() {
    LocalStorage local = (LocalStorage) storage;
    AppendableFile writer = local.createAppendable("log.journal");
    writer.append("one".getBytes(UTF_8));

    // The writer holds the file's lock while it is open: a live writer, which fencing reports.
    assertThatThrownBy(() -> local.fence("log.journal"))
        .isInstanceOf(ConflictException.class)
        .hasMessageContaining("log.journal")
        .hasMessageContaining("live writer");
    writer.append("two".getBytes(UTF_8));

    writer.close(); // a writer that ended (or died: the kernel drops its lock) is fenced at once
    local.fence("log.journal");
    assertThat(read("log.journal")).isEqualTo("onetwo".getBytes(UTF_8));
  }
}
