package io.streamstate.spark.checkpoint;

import java.io.BufferedOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.spark.sql.execution.streaming.checkpointing.CheckpointFileManager.CancellableFSDataOutputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The manager's create on local disk ({@code file:}): {@code java.nio} {@code CREATE_NEW} (the
 * kernel's {@code O_EXCL}, atomic create-if-absent) at the final name; at close the file and its
 * directory are forced to disk. No Hadoop local file system, which forks a process per file without
 * its native library.
 */
final class LocalCreates {
  private static final Logger LOG = LoggerFactory.getLogger(LocalCreates.class);

  private LocalCreates() {}

  /** Creates {@code path} on local disk with {@code CREATE_NEW} ({@code O_EXCL}). */
  static CancellableFSDataOutputStream create(
      FileSystem fs, RawLocalFileSystem local, Path path, boolean overwrite) throws IOException {
    File file = local.pathToFile(fs.makeQualified(path));
    Files.createDirectories(file.getParentFile().toPath());
    FileChannel channel = null;
    for (int attempt = 0; channel == null; attempt++) {
      if (overwrite) {
        // Through the Hadoop file system: it also removes a checksum file it may have written.
        fs.delete(path, false);
      }
      try {
        channel =
            FileChannel.open(
                file.toPath(), StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
      } catch (FileAlreadyExistsException e) {
        if (!overwrite || attempt >= 10) {
          throw DirectCreates.nameTaken(path, e);
        }
        // Another writer recreated it between our delete and create: delete again.
      }
    }
    FileChannel opened = channel;
    OutputStream out = new BufferedOutputStream(Channels.newOutputStream(opened), 64 << 10);
    return new DirectCreates.DirectOutputStream(
        out,
        path,
        () -> {
          out.flush();
          opened.force(true);
          out.close();
          forceDirectory(file.getParentFile());
        },
        () -> {
          DirectCreates.closeQuietly(out);
          Files.deleteIfExists(file.toPath());
        });
  }

  private static void forceDirectory(File dir) throws IOException {
    try (FileChannel d = FileChannel.open(dir.toPath(), StandardOpenOption.READ)) {
      d.force(true);
    } catch (IOException e) {
      // Some file systems cannot open a directory for sync; the file itself is durable.
      LOG.debug("Cannot sync directory {}: {}", dir, e.toString());
    }
  }
}
