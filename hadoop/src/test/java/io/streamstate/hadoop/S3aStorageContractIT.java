package io.streamstate.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import io.streamstate.testkit.StorageContractTests;
import java.io.IOException;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.s3a.RemoteFileChangedException;
import org.gaul.s3proxy.S3Proxy;
import org.gaul.s3proxy.auth.AuthenticationType;
import org.gaul.s3proxy.nio2blob.TransientNio2BlobStore;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The storage contract on S3A with conditional create ({@code If-None-Match: *}) against an
 * in-process S3Proxy (in-memory blob store) on 127.0.0.1, one server per class.
 */
class S3aStorageContractIT extends StorageContractTests {
  private static final String BUCKET = "ckpt";
  private static final String ACCESS_KEY = "test-key";
  private static final String SECRET_KEY = "test-secret";

  private static S3Proxy server;
  private static Configuration conf;
  private static FileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startServer() throws Exception {
    TransientNio2BlobStore blobStore = new TransientNio2BlobStore();
    blobStore.createContainer(BUCKET);
    server =
        S3Proxy.builder()
            .blobStore(blobStore)
            .endpoint(URI.create("http://127.0.0.1:0"))
            .awsAuthentication(AuthenticationType.AWS_V2_OR_V4, ACCESS_KEY, SECRET_KEY)
            .build();
    server.start();
    // Jetty is shaded inside S3Proxy: its state is compared as a string.
    await().atMost(Duration.ofSeconds(30)).until(() -> "STARTED".equals(server.getState()));

    conf = new Configuration();
    conf.set("fs.s3a.endpoint", "http://127.0.0.1:" + server.getPort());
    conf.set("fs.s3a.endpoint.region", "us-east-1");
    conf.set("fs.s3a.path.style.access", "true");
    conf.set("fs.s3a.connection.ssl.enabled", "false");
    conf.set(
        "fs.s3a.aws.credentials.provider", "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider");
    conf.set("fs.s3a.access.key", ACCESS_KEY);
    conf.set("fs.s3a.secret.key", SECRET_KEY);
    conf.set("fs.s3a.create.conditional.enabled", "true");
    conf.set("fs.s3a.fast.upload.buffer", "bytebuffer");
    conf.set("fs.s3a.impl.disable.cache", "true");
    fs = FileSystem.newInstance(URI.create("s3a://" + BUCKET + "/"), conf);
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (fs != null) {
      fs.close();
    }
    if (server != null) {
      server.stop();
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
    try (FileSystem otherClient = FileSystem.newInstance(fs.getUri(), conf)) {
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
    try (FileSystem otherClient = FileSystem.newInstance(fs.getUri(), multipart)) {
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
