package io.streamstate.spark.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.hadoop.FaultInjectingBlobStore;
import io.streamstate.hadoop.S3ProxyFixture;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link RenameFreeCheckpointFileManager} on S3A against a store whose listings lag behind writes
 * (S3Proxy behind {@link FaultInjectingBlobStore}): a directory just made, or holding only objects
 * not listed yet, lists without failing with {@code FileNotFoundException}; a log's entries not
 * listed yet are found by name, any other directory's objects not listed yet are not listed.
 */
class LaggingListingCheckpointIT {
  private static S3ProxyFixture s3;
  private static FaultInjectingBlobStore store;

  @BeforeAll
  static void start() throws Exception {
    s3 =
        S3ProxyFixture.start(
            inner -> {
              store = new FaultInjectingBlobStore(inner);
              return store;
            });
    store.setPlan(new FaultInjectingBlobStore.Plan(0, 0, 0, 0, 0, 600_000, false));
  }

  @AfterAll
  static void stop() throws Exception {
    if (s3 != null) {
      s3.close();
    }
  }

  @Test
  void aDirectoryWhoseObjectsAreNotListedYetListsWithoutFailing() throws Exception {
    Configuration conf = new Configuration(s3.conf());
    Path checkpoint = S3ProxyFixture.path("lagging/checkpoint");
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(checkpoint, conf);
    Path log = new Path(checkpoint, "sources/0");
    fm.mkdirs(log);
    try (OutputStream out = fm.createAtomic(new Path(log, "0"), false)) {
      out.write("v1\n{}".getBytes(StandardCharsets.UTF_8));
    }

    Path other = new Path(checkpoint, "state/0/0");
    fm.mkdirs(other);
    try (OutputStream out = fm.createAtomic(new Path(other, "1.delta"), true)) {
      out.write(new byte[] {1});
    }

    // A log's entry not listed yet is found by name (UnlistedLogEntries).
    assertThat(fm.list(log)).extracting(f -> f.getPath().getName()).containsExactly("0");
    // Another directory lists as the store lists it: empty, not FileNotFoundException.
    assertThat(fm.list(other)).isEmpty();
    assertThat(store.injected().get(FaultInjectingBlobStore.Kind.LISTING_LAG)).isPositive();
    // Reads by name see the entry at once.
    assertThat(fm.exists(new Path(log, "0"))).isTrue();
  }
}
