package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.Storage;
import io.streamstate.testkit.StorageContractTests;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.file.Files;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole storage contract, racing creators included, on a file system that HadoopStorage knows
 * nothing about except that it declares {@value CreateIfAbsent#EXCLUSIVE_CREATE_CAPABILITY}: it is
 * used like HDFS ({@code create(overwrite=false)}), and the same file system without the
 * declaration is refused.
 */
class HadoopStorageOnExclusiveCreateCapabilityContractTest extends StorageContractTests {
  @TempDir static java.nio.file.Path tempDir;

  private static ExclusiveCreateLocalFileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startFileSystem() throws IOException {
    fs = new ExclusiveCreateLocalFileSystem();
    fs.initialize(URI.create("exclfs:///"), new Configuration());
  }

  @AfterAll
  static void stopFileSystem() throws IOException {
    fs.close();
  }

  private static Path newRoot() {
    java.nio.file.Path root = tempDir.resolve("storage-" + roots.incrementAndGet());
    try {
      Files.createDirectories(root);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return new Path("exclfs", null, root.toString());
  }

  @Override
  protected Storage newStorage() {
    return HadoopStorage.open(fs, newRoot());
  }

  @Test
  void detectsExclusiveCreateFromThePathCapability() throws IOException {
    Path root = newRoot();

    assertThat(CreateIfAbsent.detect(fs, root)).contains(CreateIfAbsent.Method.EXCLUSIVE_CREATE);
    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isTrue();
    assertThat(((HadoopStorage) storage).fileSystem()).isSameAs(fs);
  }

  @Test
  void refusesTheSameFileSystemWithoutTheCapability() throws IOException {
    ExclusiveCreateLocalFileSystem undeclared = new ExclusiveCreateLocalFileSystem();
    undeclared.initialize(URI.create("exclfs:///"), new Configuration());
    undeclared.declaresExclusiveCreate = false;

    assertThat(CreateIfAbsent.detect(undeclared, newRoot())).isEmpty();
    assertThatThrownBy(() -> HadoopStorage.open(undeclared, newRoot()))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("does not guarantee create-if-absent")
        .hasMessageContaining(HadoopStorages.SPARK_ALLOW_SINGLE_WRITER + "=true");
  }

  @Test
  void opensThroughHadoopStoragesByScheme() {
    Configuration conf = new Configuration();
    conf.set("fs.exclfs.impl", ExclusiveCreateLocalFileSystem.class.getName());
    conf.setBoolean("fs.exclfs.impl.disable.cache", true);
    Path root = newRoot();

    Storage opened = HadoopStorages.open(root.toUri(), conf);

    assertThat(opened).isInstanceOf(HadoopStorage.class);
    assertThat(((HadoopStorage) opened).guaranteesCreateIfAbsent()).isTrue();
  }
}
