package io.streamstate.hadoop;

import java.io.IOException;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;

/**
 * Racing writers of one store on HDFS (one in-process MiniDFSCluster): each writer is its own
 * DFSClient, so the NameNode arbitrates between two lease holders.
 */
class HdfsRacingWritersIT extends RacingWritersTests {
  @TempDir static java.nio.file.Path baseDir;

  private static MiniDfsFixture hdfs;

  @BeforeAll
  static void startCluster() throws IOException {
    hdfs = MiniDfsFixture.start(baseDir);
  }

  @AfterAll
  static void stopCluster() {
    if (hdfs != null) {
      hdfs.close();
    }
  }

  @Override
  protected FileSystem newClient() throws IOException {
    return hdfs.newClient();
  }

  @Override
  protected Path newRoot(String testName) {
    return hdfs.path("/racing/" + testName);
  }
}
