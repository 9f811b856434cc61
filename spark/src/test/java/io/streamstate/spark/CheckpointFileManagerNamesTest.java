package io.streamstate.spark;

import static io.streamstate.spark.CheckpointFileManagerTests.logEntry;
import static io.streamstate.spark.CheckpointFileManagerTests.read;
import static io.streamstate.spark.CheckpointFileManagerTests.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager$;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Both names of the checkpoint file manager load through Spark's own factory ({@code
 * CheckpointFileManager.create}, as Spark does for {@code
 * spark.sql.streaming.checkpointFileManagerClass}) and work: the documented one in {@code
 * io.streamstate.spark.checkpoint}, and the first one that existing configurations name.
 */
class CheckpointFileManagerNamesTest {
  @TempDir java.nio.file.Path work;

  @ParameterizedTest
  @ValueSource(
      strings = {
        "io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager",
        "io.streamstate.spark.RenameFreeCheckpointFileManager"
      })
  void bothNamesLoadThroughSparksFactoryAndWriteWithoutRename(String className) throws IOException {
    Configuration conf = new Configuration();
    conf.set("spark.sql.streaming.checkpointFileManagerClass", className);
    Path root = new Path(work.resolve("cp").toUri());

    CheckpointFileManager fm = CheckpointFileManager$.MODULE$.create(root, conf);

    assertThat(fm.getClass().getName()).isEqualTo(className);
    assertThat(fm)
        .isInstanceOf(io.streamstate.spark.checkpoint.RenameFreeCheckpointFileManager.class);
    fm.createCheckpointDirectory();
    Path entry = new Path(root, "offsets/0");
    byte[] bytes = logEntry("both names", 200);
    write(fm, entry, bytes, false);
    assertThat(read(fm, entry)).isEqualTo(bytes);
    assertThatThrownBy(() -> write(fm, entry, logEntry("second", 200), false))
        .isInstanceOf(FileAlreadyExistsException.class);
    assertThat(work.resolve("cp").resolve("offsets").toFile().list()).containsExactly("0");
  }
}
