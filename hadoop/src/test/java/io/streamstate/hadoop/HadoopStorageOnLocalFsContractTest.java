package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.StorageContractTests;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage contract on {@link HadoopStorage} over Hadoop's {@link RawLocalFileSystem}: reads,
 * deletes and listings go through Hadoop, creates through {@code java.nio} {@code CREATE_NEW}.
 */
class HadoopStorageOnLocalFsContractTest extends StorageContractTests {
  @TempDir static java.nio.file.Path tempDir;

  private static RawLocalFileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startFileSystem() throws IOException {
    fs = new RawLocalFileSystem();
    fs.initialize(fs.getUri(), new Configuration());
  }

  @AfterAll
  static void stopFileSystem() throws IOException {
    fs.close();
  }

  @Override
  protected Storage newStorage() {
    java.nio.file.Path root = tempDir.resolve("storage-" + roots.incrementAndGet());
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return HadoopStorage.open(fs, new Path(root.toUri()));
  }

  @Test
  void usesHadoopLocalFileSystemWithCreateIfAbsent() {
    HadoopStorage hadoop = (HadoopStorage) storage;

    assertThat(hadoop.fileSystem()).isSameAs(fs);
    assertThat(hadoop.guaranteesCreateIfAbsent()).isTrue();
    assertThat(hadoop.describe()).startsWith("file:/");
  }
}
