package io.streamstate.hadoop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.streamstate.core.error.UnsupportedException;
import io.streamstate.core.storage.LocalStorage;
import io.streamstate.core.storage.Storage;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HadoopStoragesTest {
  @TempDir Path tempDir;

  @Test
  void fileUriGivesLocalStorage() {
    Storage storage = HadoopStorages.open(tempDir.toUri(), new Configuration());

    assertThat(storage).isInstanceOf(LocalStorage.class);
    assertThat(((LocalStorage) storage).root()).isEqualTo(tempDir.toAbsolutePath().normalize());
  }

  @Test
  void hadoopStyleFileUriGivesLocalStorage() {
    Storage storage = HadoopStorages.open(URI.create("file:" + tempDir), new Configuration());

    assertThat(storage).isInstanceOf(LocalStorage.class);
    assertThat(((LocalStorage) storage).root()).isEqualTo(tempDir.toAbsolutePath().normalize());
  }

  @Test
  void openHadoopGivesAHadoopStorageThatAppendsAndFencesOnLocalDiskToo() {
    HadoopStorage storage =
        HadoopStorages.openHadoop(
            tempDir.toUri(), new Configuration(), io.streamstate.core.ProcessResources.shared());

    assertThat(storage.appendSupported()).isTrue();
    assertThat(storage.canFence()).isTrue();
    assertThatThrownBy(
            () ->
                HadoopStorages.openHadoop(
                    URI.create("nocreate://cluster/checkpoints/q1"),
                    noCreateIfAbsentConf(),
                    io.streamstate.core.ProcessResources.shared()))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("does not guarantee create-if-absent");
  }

  @Test
  void schemeLessAbsolutePathGivesLocalStorageWhenDefaultFileSystemIsLocal() {
    Storage storage = HadoopStorages.open(URI.create(tempDir.toString()), new Configuration());

    assertThat(storage).isInstanceOf(LocalStorage.class);
  }

  @Test
  void schemeLessAbsolutePathGoesToTheDefaultFileSystem() {
    Configuration conf = noCreateIfAbsentConf();
    conf.set(FileSystem.FS_DEFAULT_NAME_KEY, "nocreate://cluster");

    assertThatThrownBy(() -> HadoopStorages.open(URI.create("/checkpoints/q1"), conf))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("nocreate://cluster/checkpoints/q1");
  }

  @Test
  void rejectsRelativePath() {
    assertThatThrownBy(() -> HadoopStorages.open(URI.create("checkpoints/q1"), new Configuration()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("checkpoints/q1");
  }

  @Test
  void storeWithoutCreateIfAbsentFailsFastNamingTheSetting() {
    URI root = URI.create("nocreate://cluster/checkpoints/q1");

    assertThatThrownBy(() -> HadoopStorages.open(root, noCreateIfAbsentConf()))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("nocreate://cluster/checkpoints/q1")
        .hasMessageContaining("does not guarantee create-if-absent")
        .hasMessageContaining(
            "spark.sql.streaming.stateStore.streamstate.allowSingleWriterStorage=true")
        .hasMessageContaining("streamstate.storage.allowSingleWriter=true");
  }

  @Test
  void sparkSettingAcceptsSingleWriterStore() {
    Configuration conf = noCreateIfAbsentConf();
    conf.setBoolean(HadoopStorages.SPARK_ALLOW_SINGLE_WRITER, true);

    Storage storage = HadoopStorages.open(URI.create("nocreate://cluster/checkpoints/q1"), conf);

    assertThat(storage).isInstanceOf(HadoopStorage.class);
    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isFalse();
    assertThat(storage.describe()).isEqualTo("nocreate://cluster/checkpoints/q1");
  }

  @Test
  void hadoopSettingAcceptsSingleWriterStore() {
    Configuration conf = noCreateIfAbsentConf();
    conf.setBoolean(HadoopStorages.ALLOW_SINGLE_WRITER, true);

    Storage storage = HadoopStorages.open(URI.create("nocreate://cluster/checkpoints/q1"), conf);

    assertThat(((HadoopStorage) storage).guaranteesCreateIfAbsent()).isFalse();
  }

  @Test
  void s3aWithConditionalCreateDisabledFailsFast() {
    Configuration conf = new Configuration();
    // No request is made: S3A connects lazily, and the capability probe is local.
    conf.set("fs.s3a.endpoint", "http://127.0.0.1:9");
    conf.set("fs.s3a.endpoint.region", "us-east-1");
    conf.set("fs.s3a.path.style.access", "true");
    conf.set("fs.s3a.access.key", "k");
    conf.set("fs.s3a.secret.key", "s");
    conf.set("fs.s3a.create.conditional.enabled", "false");
    conf.set("fs.s3a.impl.disable.cache", "true");

    assertThatThrownBy(() -> HadoopStorages.open(URI.create("s3a://bucket/checkpoints"), conf))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("s3a://bucket/checkpoints")
        .hasMessageContaining("fs.s3a.create.conditional.enabled=true")
        .hasMessageContaining(HadoopStorages.SPARK_ALLOW_SINGLE_WRITER);
  }

  @Test
  void unknownSchemeIsUnsupported() {
    assertThatThrownBy(() -> HadoopStorages.open(URI.create("nosuchfs://x/y"), new Configuration()))
        .isInstanceOf(UnsupportedException.class)
        .hasMessageContaining("nosuchfs://x/y");
  }

  private static Configuration noCreateIfAbsentConf() {
    Configuration conf = new Configuration();
    conf.setClass("fs.nocreate.impl", NoCreateIfAbsentFileSystem.class, FileSystem.class);
    conf.setBoolean("fs.nocreate.impl.disable.cache", true);
    return conf;
  }

  /** A file system that declares nothing; none of its I/O methods is ever called here. */
  public static final class NoCreateIfAbsentFileSystem extends FileSystem {
    private URI uri;

    @Override
    public void initialize(URI name, Configuration conf) throws IOException {
      super.initialize(name, conf);
      uri = URI.create(name.getScheme() + "://" + name.getAuthority());
    }

    @Override
    public String getScheme() {
      return "nocreate";
    }

    @Override
    public URI getUri() {
      return uri;
    }

    @Override
    public FSDataInputStream open(org.apache.hadoop.fs.Path f, int bufferSize) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FSDataOutputStream create(
        org.apache.hadoop.fs.Path f,
        FsPermission permission,
        boolean overwrite,
        int bufferSize,
        short replication,
        long blockSize,
        Progressable progress) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FSDataOutputStream append(
        org.apache.hadoop.fs.Path f, int bufferSize, Progressable progress) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean rename(org.apache.hadoop.fs.Path src, org.apache.hadoop.fs.Path dst) {
      throw new UnsupportedOperationException();
    }

    @Override
    public boolean delete(org.apache.hadoop.fs.Path f, boolean recursive) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileStatus[] listStatus(org.apache.hadoop.fs.Path f) {
      throw new UnsupportedOperationException();
    }

    @Override
    public void setWorkingDirectory(org.apache.hadoop.fs.Path dir) {}

    @Override
    public org.apache.hadoop.fs.Path getWorkingDirectory() {
      return new org.apache.hadoop.fs.Path(uri.toString() + "/");
    }

    @Override
    public boolean mkdirs(org.apache.hadoop.fs.Path f, FsPermission permission) {
      throw new UnsupportedOperationException();
    }

    @Override
    public FileStatus getFileStatus(org.apache.hadoop.fs.Path f) {
      throw new UnsupportedOperationException();
    }
  }
}
