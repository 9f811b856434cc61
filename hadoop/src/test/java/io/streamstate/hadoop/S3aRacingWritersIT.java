package io.streamstate.hadoop;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * Racing writers of one store on S3A against an in-process S3Proxy: each writer is its own S3A
 * client, and the store arbitrates the conditional PUTs ({@code If-None-Match: *}).
 */
class S3aRacingWritersIT extends RacingWritersTests {
  private static S3ProxyFixture s3;

  @BeforeAll
  static void startServer() throws Exception {
    s3 = S3ProxyFixture.start();
  }

  @AfterAll
  static void stopServer() throws Exception {
    if (s3 != null) {
      s3.close();
    }
  }

  @Override
  protected FileSystem newClient() throws IOException {
    return s3.newClient();
  }

  @Override
  protected Path newRoot(String testName) {
    return S3ProxyFixture.path("racing/" + testName);
  }
}
