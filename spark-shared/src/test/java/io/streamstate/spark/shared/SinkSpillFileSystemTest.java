package io.streamstate.spark.shared;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The spill file system of the hedged file-sink protocol: what Spark's writers call on it. */
class SinkSpillFileSystemTest {
  @TempDir java.nio.file.Path dir;

  private static FileSystem registered(Configuration conf, Path path) throws IOException {
    SinkSpillFileSystem.register(conf);
    return path.getFileSystem(conf);
  }

  @Test
  void createWritesThePlainLocalFileWithoutChecksumFiles() throws IOException {
    java.nio.file.Path local = dir.resolve("task/part-00000-x.c000.json");
    Path path = SinkSpillFileSystem.pathOf(local);
    FileSystem fs = registered(new Configuration(), path);
    assertThat(fs).isInstanceOf(SinkSpillFileSystem.class);

    try (FSDataOutputStream out = fs.create(path, false)) {
      out.write("{\"a\":1}\n".getBytes(StandardCharsets.UTF_8));
      assertThat(out.getPos()).isEqualTo(8);
    }

    assertThat(Files.readString(local)).isEqualTo("{\"a\":1}\n");
    try (var files = Files.list(local.getParent())) {
      assertThat(files.map(p -> p.getFileName().toString()))
          .containsExactly(local.getFileName().toString());
    }
    FileStatus status = fs.getFileStatus(path);
    assertThat(status.getLen()).isEqualTo(8);
    assertThat(status.isFile()).isTrue();
    assertThat(status.getPath()).isEqualTo(path);
  }

  @Test
  void createRefusesAnExistingFileUnlessAskedToOverwrite() throws IOException {
    java.nio.file.Path local = dir.resolve("f");
    Path path = SinkSpillFileSystem.pathOf(local);
    FileSystem fs = registered(new Configuration(), path);
    fs.create(path, false).close();

    assertThatThrownBy(() -> fs.create(path, false))
        .isInstanceOf(FileAlreadyExistsException.class)
        .hasMessageContaining("already exists");
    try (FSDataOutputStream out = fs.create(path, true)) {
      out.write(1);
    }
    assertThat(Files.size(local)).isEqualTo(1);
  }

  @Test
  void anotherConfigurationFindsTheRegisteredFileSystemInHadoopsCache() throws IOException {
    // Spark's write statistics look the file up through the sink's configuration, not the task's.
    Path path = SinkSpillFileSystem.pathOf(dir.resolve("g"));
    FileSystem fs = registered(new Configuration(), path);
    fs.create(path, false).close();

    Configuration other = new Configuration();
    assertThat(other.get("fs." + SinkSpillFileSystem.SCHEME + ".impl")).isNull();
    assertThat(path.getFileSystem(other).getFileStatus(path).getLen()).isZero();
  }

  @Test
  void missingFilesAndDeletes() throws IOException {
    java.nio.file.Path local = dir.resolve("d/e/f");
    Path path = SinkSpillFileSystem.pathOf(local);
    FileSystem fs = registered(new Configuration(), path);
    assertThatThrownBy(() -> fs.getFileStatus(path)).isInstanceOf(FileNotFoundException.class);
    assertThat(fs.delete(path, false)).isFalse();

    fs.create(path, false).close();
    assertThat(fs.getFileStatus(SinkSpillFileSystem.pathOf(dir.resolve("d"))).isDirectory())
        .isTrue();
    assertThatThrownBy(() -> fs.delete(SinkSpillFileSystem.pathOf(dir.resolve("d")), false))
        .isInstanceOf(IOException.class)
        .hasMessageContaining("not empty");
    assertThat(fs.delete(SinkSpillFileSystem.pathOf(dir.resolve("d")), true)).isTrue();
    assertThat(dir.resolve("d")).doesNotExist();
  }

  @Test
  void callsOutputWritersNeverMakeAreRefusedByName() throws IOException {
    Path path = SinkSpillFileSystem.pathOf(dir.resolve("h"));
    FileSystem fs = registered(new Configuration(), path);
    assertThatThrownBy(() -> fs.open(path))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("streamstate-spill")
        .hasMessageContaining("does not open");
    assertThatThrownBy(() -> fs.rename(path, path))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("does not rename");
    assertThatThrownBy(() -> fs.listStatus(path))
        .isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("does not listStatus");
    assertThatThrownBy(() -> SinkSpillFileSystem.localOf(new Path("file:/x")))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("Not a streamstate-spill path");
  }
}
