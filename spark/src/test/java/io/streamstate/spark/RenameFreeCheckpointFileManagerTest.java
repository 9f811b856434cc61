package io.streamstate.spark;

import static org.assertj.core.api.Assertions.assertThat;

import io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager;
import java.io.IOException;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The checkpoint file manager's contract on local disk ({@code file:}, {@code java.nio}). */
class RenameFreeCheckpointFileManagerTest extends CheckpointFileManagerTests {
  @TempDir static java.nio.file.Path work;

  @Override
  protected Path newRoot(String testName) {
    return new Path(work.resolve(testName).toUri());
  }

  @Override
  protected Configuration conf() {
    return new Configuration();
  }

  @Override
  protected Configuration independentClientConf() {
    Configuration conf = new Configuration();
    conf.setBoolean("fs.file.impl.disable.cache", true);
    return conf;
  }

  @Override
  protected String storeName() {
    return "local disk";
  }

  @Test
  void localWritesLeaveNoTempOrChecksumFiles() throws IOException {
    Path root = newRoot("noSideFiles");
    RenameFreeCheckpointFileManager fm = new RenameFreeCheckpointFileManager(root, conf());
    fm.createCheckpointDirectory();
    write(fm, new Path(root, "commits/0"), new byte[] {1, 2, 3}, false);
    try (var files = Files.list(work.resolve("noSideFiles").resolve("commits"))) {
      assertThat(files.map(p -> p.getFileName().toString())).containsExactly("0");
    }
    assertThat(fm.isLocal()).isTrue();
  }
}
