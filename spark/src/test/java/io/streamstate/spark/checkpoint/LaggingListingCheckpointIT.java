package io.streamstate.spark.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.hadoop.FaultInjectingBlobStore;
import io.streamstate.hadoop.S3ProxyFixture;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link RenameFreeCheckpointFileManager} on S3A against a store whose listings lag behind writes
 * (S3Proxy behind {@link FaultInjectingBlobStore}): a directory just made, or holding only objects
 * not listed yet, lists as empty, as Spark's logs expect of a directory they made, instead of
 * failing with {@code FileNotFoundException}.
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
  void aDirectoryWhoseObjectsAreNotListedYetListsAsEmpty() throws Exception {
    Configuration conf = new Configuration(s3.conf());
    Path checkpoint = S3ProxyFixture.path("lagging/checkpoint");
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(checkpoint, conf);
    Path log = new Path(checkpoint, "sources/0");
    fm.mkdirs(log);
    try (OutputStream out = fm.createAtomic(new Path(log, "0"), false)) {
      out.write("v1\n{}".getBytes(StandardCharsets.UTF_8));
    }

    FileStatus[] listed = fm.list(log);

    assertThat(listed).isEmpty();
    assertThat(store.injected().get(FaultInjectingBlobStore.Kind.LISTING_LAG)).isPositive();
    // Reads by name see the entry at once.
    assertThat(fm.exists(new Path(log, "0"))).isTrue();
  }
}
