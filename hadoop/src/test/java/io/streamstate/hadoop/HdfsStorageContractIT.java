package io.streamstate.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import io.streamstate.testkit.StorageContractTests;
import java.io.IOException;
import java.net.URI;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The storage contract on HDFS: one in-process MiniDFSCluster ({@link MiniDfsFixture}) per class.
 */
class HdfsStorageContractIT extends StorageContractTests {
  @TempDir static java.nio.file.Path baseDir;

  private static MiniDfsFixture hdfs;
  private static FileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startCluster() throws IOException {
    hdfs = MiniDfsFixture.start(baseDir);
    fs = hdfs.fileSystem();
  }

  @AfterAll
  static void stopCluster() {
    if (hdfs != null) {
      hdfs.close();
    }
  }

  @Override
  protected Storage newStorage() {
    return HadoopStorage.open(fs, new Path("/contract/storage-" + roots.incrementAndGet()));
  }

  @Test
  void hdfsGivesCreateIfAbsent() {
    assertThat(HadoopStorage.supportsCreateIfAbsent(fs, new Path("/"))).isTrue();
    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isTrue();
    assertThat(storage.describe()).startsWith("hdfs://");
  }

  @Test
  void factoryOpensHdfsUri() {
    URI root = URI.create(fs.getUri() + "/factory/q1");

    Storage opened = HadoopStorages.open(root, fs.getConf());
    opened.create("a/b", ContentWriter.ofBytes(utf8("via factory")));

    assertThat(opened).isInstanceOf(HadoopStorage.class);
    assertThat(opened.describe()).isEqualTo(root.toString());
    assertThat(Storages.readAll(opened, "a/b")).isEqualTo(utf8("via factory"));
  }

  @Test
  void fencingRecoversTheLeaseSoTheFirstWritersNextAppendFailsAndTheFileStaysAsItWas()
      throws Exception {
    HadoopStorage first = (HadoopStorage) storage;
    io.streamstate.core.storage.AppendableFile writer = first.createAppendable("log.journal");
    writer.append(utf8("one"));
    // A restarted driver is another client: it fences the old writer by lease recovery.
    try (FileSystem otherClient = hdfs.newClient()) {
      HadoopStorage next = HadoopStorage.open(otherClient, first.root());
      next.fence("log.journal");
      assertThatThrownBy(() -> writer.append(utf8("two")))
          .isInstanceOf(io.streamstate.core.error.StreamStateException.class);
      assertThat(Storages.readAll(next, "log.journal")).isEqualTo(utf8("one"));
    }
  }

  @Test
  void rejectsSecondClientWhileFirstIsStillWriting() throws Exception {
    // Another client (another lease holder), as a second executor would be.
    try (FileSystem otherClient = hdfs.newClient()) {
      Storage other = HadoopStorage.open(otherClient, ((HadoopStorage) storage).root());
      CountDownLatch firstIsWriting = new CountDownLatch(1);
      CountDownLatch secondHasTried = new CountDownLatch(1);
      CompletableFuture<Void> first =
          CompletableFuture.runAsync(
              () ->
                  storage.create(
                      "dir/v1",
                      out -> {
                        out.write(utf8("first "));
                        firstIsWriting.countDown();
                        await(secondHasTried);
                        out.write(utf8("writer"));
                      }));
      assertThat(firstIsWriting.await(30, TimeUnit.SECONDS)).isTrue();

      try {
        assertThatThrownBy(() -> other.create("dir/v1", ContentWriter.ofBytes(utf8("second"))))
            .isInstanceOf(FileAlreadyExistsException.class)
            .hasMessageContaining("dir/v1");
      } finally {
        secondHasTried.countDown();
      }
      first.get(30, TimeUnit.SECONDS);

      assertThat(read("dir/v1")).isEqualTo(utf8("first writer"));
      assertThatThrownBy(() -> other.create("dir/v1", ContentWriter.ofBytes(utf8("second"))))
          .isInstanceOf(FileAlreadyExistsException.class);
    }
  }

  @Test
  void bulkDeleteRemovesNamedFilesOnly() {
    for (String name : List.of("d/1", "d/2", "d/3")) {
      storage.create(name, ContentWriter.ofBytes(utf8(name)));
    }

    Storages.deleteAll(storage, List.of("d/1", "d/3", "d/absent"));

    assertThat(names("d/")).containsExactly("d/2");
  }

  private static void await(CountDownLatch latch) throws IOException {
    try {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new IOException("timed out");
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IOException(e);
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(UTF_8);
  }
}
