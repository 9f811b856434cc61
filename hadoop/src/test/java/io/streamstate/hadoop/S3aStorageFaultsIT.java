package io.streamstate.hadoop;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.FileAlreadyExistsException;
import io.streamstate.core.storage.ContentWriter;
import io.streamstate.core.storage.Storage;
import io.streamstate.core.storage.Storages;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link HadoopStorage} on S3A against S3Proxy behind a {@link FaultInjectingBlobStore}: one fault
 * at a time, on a named request; and the fault-injecting store itself (listings lag behind writes
 * while GET sees them, timestamps in whole seconds).
 */
class S3aStorageFaultsIT {
  private static final long LAG_MS = 60_000;
  private static FaultInjectingBlobStore store;
  private static S3ProxyFixture s3;
  private static FileSystem fs;
  private static final AtomicInteger roots = new AtomicInteger();

  @BeforeAll
  static void startServer() throws Exception {
    s3 =
        S3ProxyFixture.start(
            inner -> {
              store = new FaultInjectingBlobStore(inner);
              return store;
            });
    fs = s3.fileSystem();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (s3 != null) {
      s3.close();
    }
  }

  private static String newRoot() {
    return "faults/root-" + roots.incrementAndGet();
  }

  private static Storage storage(FileSystem client, String root) {
    return HadoopStorage.open(client, S3ProxyFixture.path(root));
  }

  @Test
  void aCreateWhose500HidItsSuccessIsPublishedNotRefused() {
    store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    String root = newRoot();
    Storage storage = storage(fs, root);
    long before = store.injected().get(FaultInjectingBlobStore.Kind.INTERNAL_ERROR_AFTER);
    store.failNextRequestOn(root + "/v1", FaultInjectingBlobStore.Kind.INTERNAL_ERROR_AFTER);

    // The PUT lands, the client is told 500 and sends it again; the store refuses the retry
    // (412): the object there is this write's.
    storage.create("v1", ContentWriter.ofBytes(utf8("the content")));

    assertThat(store.injected().get(FaultInjectingBlobStore.Kind.INTERNAL_ERROR_AFTER))
        .isEqualTo(before + 1);
    assertThat(Storages.readAll(storage, "v1")).isEqualTo(utf8("the content"));
  }

  @Test
  void aCreateWhose500HidItsSuccessIsPublishedWithS3aRetriesLow() throws IOException {
    store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    Configuration low = new Configuration(s3.conf());
    low.set("fs.s3a.attempts.maximum", "0");
    low.set("fs.s3a.retry.limit", "1");
    low.set("fs.s3a.retry.interval", "10ms");
    try (FileSystem client = s3.newClient(low)) {
      String root = newRoot();
      Storage storage = storage(client, root);
      store.failNextRequestOn(root + "/v1", FaultInjectingBlobStore.Kind.INTERNAL_ERROR_AFTER);

      storage.create("v1", ContentWriter.ofBytes(utf8("the content")));

      assertThat(Storages.readAll(storage, "v1")).isEqualTo(utf8("the content"));
    }
  }

  @Test
  void aRetriedCreateMeetingAnotherWritersContentStillLoses() throws IOException {
    store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    String root = newRoot();
    try (FileSystem otherClient = s3.newClient()) {
      storage(otherClient, root).create("v1", ContentWriter.ofBytes(utf8("theirs")));
      Storage ours = storage(fs, root);
      store.failNextRequestOn(root + "/v1", FaultInjectingBlobStore.Kind.SLOW_DOWN_503);

      assertThatThrownBy(() -> ours.create("v1", ContentWriter.ofBytes(utf8("ours"))))
          .isInstanceOf(FileAlreadyExistsException.class)
          .hasMessageContaining("v1");
      assertThat(Storages.readAll(ours, "v1")).isEqualTo(utf8("theirs"));
    }
  }

  @Test
  void aCreateRefusedWhereExactlyItsContentIsSucceeds() throws IOException {
    store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    String root = newRoot();
    try (FileSystem otherClient = s3.newClient()) {
      storage(otherClient, root).create("v1", ContentWriter.ofBytes(utf8("same bytes")));
      Storage ours = storage(fs, root);

      ours.create("v1", ContentWriter.ofBytes(utf8("same bytes")));
      assertThatThrownBy(() -> ours.create("v1", ContentWriter.ofBytes(utf8("same byteS"))))
          .isInstanceOf(FileAlreadyExistsException.class);
    }
  }

  @Test
  void aNewObjectIsReadableAtOnceButListedOnlyAfterTheLag() {
    store.setPlan(new FaultInjectingBlobStore.Plan(0, 0, 0, 0, 0, LAG_MS, true));
    try {
      String root = newRoot();
      Storage storage = storage(fs, root);
      long lagged = store.injected().get(FaultInjectingBlobStore.Kind.LISTING_LAG);

      storage.create("v1", ContentWriter.ofBytes(utf8("new")));

      assertThat(Storages.readAll(storage, "v1")).isEqualTo(utf8("new"));
      assertThat(storage.list("")).isEmpty();
      assertThat(store.injected().get(FaultInjectingBlobStore.Kind.LISTING_LAG))
          .isGreaterThan(lagged);
    } finally {
      store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    }
  }

  @Test
  void listedTimestampsAreWholeSeconds() {
    String root = newRoot();
    Storage storage = storage(fs, root);
    for (int i = 0; i < 5; i++) {
      storage.create("f" + i, ContentWriter.ofBytes(utf8("x")));
    }
    store.setPlan(new FaultInjectingBlobStore.Plan(0, 0, 0, 0, 0, 0, true));
    try {
      assertThat(storage.list(""))
          .hasSize(5)
          .allSatisfy(f -> assertThat(f.lastModifiedMillis() % 1000).isZero());
    } finally {
      store.setPlan(FaultInjectingBlobStore.Plan.NONE);
    }
  }

  private static byte[] utf8(String s) {
    return s.getBytes(UTF_8);
  }
}
