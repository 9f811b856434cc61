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
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The storage contract on S3A with conditional create ({@code If-None-Match: *}) against an
 * in-process S3Proxy ({@link S3ProxyFixture}), one server per class.
 */
class S3aStorageContractIT extends StorageContractTests {
  private static final String BUCKET = S3ProxyFixture.BUCKET;

  private static S3ProxyFixture s3;
  private static Configuration conf;
  private static FileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3ProxyFixture.start();
    conf = s3.conf();
    fs = s3.fileSystem();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (s3 != null) {
      s3.close();
    }
  }

  @Override
  protected Storage newStorage() {
    return HadoopStorage.open(
        fs, new Path("s3a://" + BUCKET + "/contract/storage-" + roots.incrementAndGet()));
  }

  @Test
  void s3aWithConditionalCreateGivesCreateIfAbsent() {
    assertThat(HadoopStorage.supportsCreateIfAbsent(fs, new Path("s3a://" + BUCKET + "/")))
        .isTrue();
    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isTrue();
    assertThat(storage.describe()).startsWith("s3a://" + BUCKET + "/contract/");
  }

  @Test
  void anObjectStoreCannotAppendAndSaysSo() {
    HadoopStorage s3Storage = (HadoopStorage) storage;
    assertThat(s3Storage.appendSupported()).isFalse();
    assertThatThrownBy(() -> s3Storage.createAppendable("_segments/x.journal"))
        .isInstanceOf(io.streamstate.core.error.UnsupportedException.class)
        .hasMessageContaining("cannot append");
    assertThat(storage.list("_segments/")).isEmpty();
  }

  @Test
  void factoryOpensS3aUri() {
    URI root = URI.create("s3a://" + BUCKET + "/factory/q1");

    Storage opened = HadoopStorages.open(root, conf);
    opened.create("a/b", ContentWriter.ofBytes(utf8("via factory")));

    assertThat(opened).isInstanceOf(HadoopStorage.class);
    assertThat(opened.describe()).isEqualTo(root.toString());
    assertThat(Storages.readAll(opened, "a/b")).isEqualTo(utf8("via factory"));
  }

  @Test
  void rejectsSecondClientCreatingAnExistingNameAtClose() throws IOException {
    try (FileSystem otherClient = s3.newClient()) {
      Storage other = HadoopStorage.open(otherClient, ((HadoopStorage) storage).root());
      storage.create("dir/v1", ContentWriter.ofBytes(utf8("first")));

      assertThatThrownBy(() -> other.create("dir/v1", ContentWriter.ofBytes(utf8("second"))))
          .isInstanceOf(FileAlreadyExistsException.class)
          .hasMessageContaining("dir/v1")
          // Refused at close by the store (If-None-Match: *), not by a HEAD before writing.
          .hasCauseInstanceOf(RemoteFileChangedException.class)
          .rootCause()
          .hasMessageContaining("Status Code: 412");
      assertThat(read("dir/v1")).isEqualTo(utf8("first"));
    }
  }

  @Test
  void multipartUploadIsConditionalToo() throws IOException {
    Configuration multipart = new Configuration(conf);
    multipart.set("fs.s3a.multipart.size", "5M"); // the smallest part S3 accepts
    multipart.set("fs.s3a.multipart.threshold", "5M");
    byte[] large = new byte[11 * 1024 * 1024]; // three parts
    new Random(7).nextBytes(large);
    try (FileSystem otherClient = s3.newClient(multipart)) {
      Storage other = HadoopStorage.open(otherClient, ((HadoopStorage) storage).root());

      other.create("sst/large", ContentWriter.ofBytes(large));
      assertThatThrownBy(() -> other.create("sst/large", ContentWriter.ofBytes(new byte[1 << 20])))
          .isInstanceOf(FileAlreadyExistsException.class);
      storage.create("sst/small", ContentWriter.ofBytes(utf8("small")));
      assertThatThrownBy(() -> other.create("sst/small", ContentWriter.ofBytes(large)))
          .isInstanceOf(FileAlreadyExistsException.class);

      assertThat(read("sst/large")).isEqualTo(large);
      assertThat(read("sst/small")).isEqualTo(utf8("small"));
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

  private static byte[] utf8(String s) {
    return s.getBytes(UTF_8);
  }
}
